//! Reading the workspace (for context files) with argv-only execs: no shell, so no content
//! or path is ever interpreted. Only a sandbox that already runs is read; none is created
//! just to look for files.

use bollard::exec::{CreateExecOptions, StartExecResults};
use futures_util::StreamExt;

use super::{DockerSandboxes, docker_err, status_of};
use crate::{Result, SandboxKey, WORKSPACE};

/// A workspace-relative path that cannot leave the workspace.
pub(crate) fn safe_relative(path: &str) -> Option<String> {
    let path = path.trim_matches('/');
    let ok =
        path.split('/').all(|seg| !seg.is_empty() && seg != ".." && seg != ".") && !path.contains(['\0', '\n', '\\']);
    match (path.is_empty(), ok) {
        (true, _) => Some(WORKSPACE.to_owned()),
        (false, true) => Some(format!("{WORKSPACE}/{path}")),
        (false, false) => None,
    }
}

impl DockerSandboxes {
    /// Whether `key`'s sandbox exists and runs.
    pub async fn is_running(&self, key: SandboxKey) -> Result<bool> {
        match self.inner.docker.inspect_container(&self.container_name(key), None).await {
            Ok(info) => Ok(info.state.and_then(|s| s.running).unwrap_or(false)),
            Err(e) if status_of(&e) == Some(404) => Ok(false),
            Err(e) => Err(docker_err(e)),
        }
    }

    /// Runs `argv` (no shell) and returns its exit code and stdout, at most `max` bytes.
    async fn run_argv(&self, key: SandboxKey, argv: Vec<&str>, max: usize) -> Result<(Option<i64>, Vec<u8>)> {
        let docker = &self.inner.docker;
        let name = self.container_name(key);
        let exec = docker
            .create_exec(
                &name,
                CreateExecOptions {
                    cmd: Some(argv),
                    attach_stdout: Some(true),
                    attach_stderr: Some(false),
                    ..Default::default()
                },
            )
            .await
            .map_err(docker_err)?;
        let mut out = Vec::new();
        if let StartExecResults::Attached { output: mut stream, .. } =
            docker.start_exec(&exec.id, None).await.map_err(docker_err)?
        {
            while let Some(Ok(chunk)) = stream.next().await {
                let bytes = chunk.into_bytes();
                let room = max.saturating_sub(out.len());
                out.extend_from_slice(&bytes[..room.min(bytes.len())]);
            }
        }
        let code = docker.inspect_exec(&exec.id).await.map_err(docker_err)?.exit_code;
        Ok((code, out))
    }

    /// The text of a workspace file, if the sandbox runs and the file exists (at most `max` bytes).
    pub async fn read_workspace_file(&self, key: SandboxKey, path: &str, max: usize) -> Result<Option<String>> {
        let Some(abs) = safe_relative(path) else { return Ok(None) };
        if !self.is_running(key).await? {
            return Ok(None);
        }
        let (code, out) = self.run_argv(key, vec!["cat", "--", &abs], max).await?;
        Ok((code == Some(0)).then(|| String::from_utf8_lossy(&out).into_owned()))
    }

    /// The names in a workspace directory (empty if it or the sandbox does not exist).
    pub async fn list_workspace_dir(&self, key: SandboxKey, path: &str) -> Result<Vec<String>> {
        let Some(abs) = safe_relative(path) else { return Ok(Vec::new()) };
        if !self.is_running(key).await? {
            return Ok(Vec::new());
        }
        let (code, out) = self.run_argv(key, vec!["ls", "-1a", "--", &abs], 256 * 1024).await?;
        if code != Some(0) {
            return Ok(Vec::new());
        }
        Ok(String::from_utf8_lossy(&out).lines().filter(|n| *n != "." && *n != "..").map(str::to_owned).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_never_leave_the_workspace() {
        assert_eq!(safe_relative("AGENTS.md").as_deref(), Some("/workspace/AGENTS.md"));
        assert_eq!(safe_relative("").as_deref(), Some("/workspace"));
        assert_eq!(safe_relative("app/.cursor/rules").as_deref(), Some("/workspace/app/.cursor/rules"));
        assert_eq!(safe_relative("../etc/passwd"), None);
        assert_eq!(safe_relative("a/../../x"), None);
        assert_eq!(safe_relative("a\nb"), None);
    }
}
