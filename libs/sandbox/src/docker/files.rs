//! Reading the workspace (for context files). Paths are only ever passed as arguments (to
//! `ls`, or to a constant script), never spliced into a command, so no path or content is
//! interpreted. Only a sandbox that already runs is read; none is created just to look for
//! files.

/// Prints the first readable file of its arguments: its path on one line, then at most `$1`
/// bytes of it. Exits 3 when there is none.
const READ_FIRST_SCRIPT: &str = r#"max=$1; shift; for f in "$@"; do if [ -f "$f" ] && [ -r "$f" ]; then printf '%s\n' "$f"; exec head -c "$max" -- "$f"; fi; done; exit 3"#;

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
    pub async fn container_running(&self, key: SandboxKey) -> Result<bool> {
        match self.inner.docker.inspect_container(&self.container_name(key), None).await {
            Ok(info) => Ok(info.state.and_then(|s| s.running).unwrap_or(false)),
            Err(e) if status_of(&e) == Some(404) => Ok(false),
            Err(e) => Err(docker_err(e)),
        }
    }

    /// Runs `argv` and returns its exit code and stdout, at most `max` bytes; `None` when the
    /// sandbox is gone or stopped (nothing is created to run it).
    async fn run_argv(&self, key: SandboxKey, argv: Vec<&str>, max: usize) -> Result<Option<(Option<i64>, Vec<u8>)>> {
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
            .await;
        let exec = match exec {
            Ok(exec) => exec,
            Err(e) if matches!(status_of(&e), Some(404 | 409)) => return Ok(None),
            Err(e) => return Err(docker_err(e)),
        };
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
        Ok(Some((code, out)))
    }

    /// The first of `paths` (workspace-relative) that is a readable file, with its text (at
    /// most `max` bytes), in one exec.
    pub async fn read_first_workspace_file(
        &self,
        key: SandboxKey,
        paths: &[String],
        max: usize,
    ) -> Result<Option<(String, String)>> {
        // Paths that would leave the workspace are not asked for at all.
        let asked: Vec<(&String, String)> =
            paths.iter().filter_map(|p| safe_relative(p).filter(|abs| abs != WORKSPACE).map(|abs| (p, abs))).collect();
        if asked.is_empty() {
            return Ok(None);
        }
        let max_arg = max.to_string();
        let mut argv = vec!["sh", "-c", READ_FIRST_SCRIPT, "sh", max_arg.as_str()];
        argv.extend(asked.iter().map(|(_, abs)| abs.as_str()));
        let Some((code, out)) = self.run_argv(key, argv, max + 4096).await? else { return Ok(None) };
        if code != Some(0) {
            return Ok(None);
        }
        let text = String::from_utf8_lossy(&out);
        let Some((found, content)) = text.split_once('\n') else { return Ok(None) };
        Ok(asked.iter().find(|(_, abs)| abs == found).map(|(rel, _)| ((*rel).clone(), content.to_owned())))
    }

    /// The names in a workspace directory (empty if it or the sandbox does not exist).
    pub async fn list_workspace_dir(&self, key: SandboxKey, path: &str) -> Result<Vec<String>> {
        let Some(abs) = safe_relative(path) else { return Ok(Vec::new()) };
        let Some((code, out)) = self.run_argv(key, vec!["ls", "-1a", "--", &abs], 256 * 1024).await? else {
            return Ok(Vec::new());
        };
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
