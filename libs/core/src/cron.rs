//! A cron job's timing as it is stored (read and checked by `hermes-schedule`, kept by the
//! store): here so both can name it without depending on each other.

use chrono::{DateTime, Utc};

/// When a job runs: its schedule as stored (reading it again gives the same schedule), its
/// kind (`interval`, `cron`, `once`), how people see it, its time zone, how many runs it makes
/// (`None`: forever), and its first run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobTiming {
    pub schedule: String,
    pub schedule_kind: String,
    pub schedule_display: String,
    pub timezone: String,
    pub repeat_times: Option<i32>,
    pub next_run_at: DateTime<Utc>,
}

/// Where a job's scripts live in its sandbox (upstream's `~/.hermes/scripts/`). A job's
/// `script` names a file in it; nothing outside it runs as a job's script.
pub const SCRIPTS_DIR: &str = "/workspace/.hermes/scripts";
/// Jobs a run may take the latest output of (`context_from`; the schema holds it too).
pub const MAX_CONTEXT_FROM: usize = 10;
/// Why a job cannot have a script when its agent has a workspace per person or conversation.
pub const SCRIPTS_NEED_ONE_WORKSPACE: &str = "scripts need an agent with one shared workspace (workspace `agent`): \
     with a workspace per person or per conversation, each job's runs have a sandbox of their own, without the scripts";
/// The workspace as the sandbox shows it.
const WORKSPACE: &str = "/workspace";

/// A job's `script` checked: a file path inside [`SCRIPTS_DIR`], given relative to it (or
/// absolute within it), without `..`, `~`, empty or hidden-option components, returned
/// relative. Checked again where it runs, against symlinks (`hermes-worker`).
pub fn script_path(raw: &str) -> Result<String, String> {
    let raw = raw.trim();
    let relative = raw.strip_prefix(SCRIPTS_DIR).map(|r| r.strip_prefix('/').unwrap_or("/")).unwrap_or(raw);
    if relative.is_empty() || relative.chars().count() > 200 {
        return Err("give the script as a path of at most 200 characters in the scripts folder".into());
    }
    if relative.starts_with('/') || relative.starts_with('~') {
        return Err(format!("the script must be in the agent's scripts folder ({SCRIPTS_DIR}): give its path there"));
    }
    checked_components(relative, "script")
        .map_err(|why| format!("the script must be a file in the agent's scripts folder ({SCRIPTS_DIR}): {why}"))?;
    Ok(relative.to_owned())
}

/// A job's `workdir` checked: a folder of the workspace, absolute (`/workspace/...`) or
/// relative to it, without `..`; returned absolute.
pub fn workdir(raw: &str) -> Result<String, String> {
    let raw = raw.trim().trim_end_matches('/');
    let inside = match raw.strip_prefix(WORKSPACE) {
        Some("") => return Ok(WORKSPACE.to_owned()),
        Some(rest) if rest.starts_with('/') => &rest[1..],
        _ if raw.starts_with('/') || raw.starts_with('~') => {
            return Err(format!("the workdir must be in the workspace ({WORKSPACE})"));
        }
        _ => raw,
    };
    if inside.is_empty() || inside.chars().count() > 400 {
        return Err("give the workdir as a folder of the workspace, at most 400 characters".into());
    }
    checked_components(inside, "workdir").map_err(|why| format!("the workdir must be in the workspace: {why}"))?;
    Ok(format!("{WORKSPACE}/{inside}"))
}

/// A checked `workdir` (`/workspace/...`) as a path relative to the workspace.
pub fn relative_workdir(workdir: &str) -> &str {
    workdir.strip_prefix(WORKSPACE).unwrap_or(workdir).trim_matches('/')
}

fn checked_components(path: &str, what: &str) -> Result<(), String> {
    if path.chars().any(|c| c.is_control() || c == '\\') {
        return Err(format!("the {what} path has a control character or a backslash"));
    }
    for part in path.split('/') {
        if part.is_empty() || part == "." || part == ".." || part.starts_with('-') {
            return Err(format!("the {what} path may not have empty, `.`, `..` or `-`-led parts: {path:?}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_stays_in_the_scripts_folder() {
        assert_eq!(script_path(" watch.sh ").unwrap(), "watch.sh");
        assert_eq!(script_path("checks/disk.py").unwrap(), "checks/disk.py");
        assert_eq!(script_path("/workspace/.hermes/scripts/watch.sh").unwrap(), "watch.sh");
        for bad in [
            "",
            "/etc/passwd",
            "~/x.sh",
            "../x.sh",
            "a/../../x.sh",
            "./x.sh",
            "a//b.sh",
            "-rf.sh",
            "x\n.sh",
            "a\\b.sh",
            "/workspace/.hermes/scripts",
            "/workspace/.hermes/scriptsx/a.sh",
        ] {
            assert!(script_path(bad).is_err(), "{bad:?} is refused");
        }
        assert!(script_path(&"a".repeat(201)).is_err());
    }

    #[test]
    fn a_workdir_stays_in_the_workspace() {
        assert_eq!(workdir("/workspace").unwrap(), "/workspace");
        assert_eq!(workdir("/workspace/repo/").unwrap(), "/workspace/repo");
        assert_eq!(workdir("repo/src").unwrap(), "/workspace/repo/src");
        for bad in ["/etc", "/workspacex", "~", "../x", "repo/../../etc", "", "-x"] {
            assert!(workdir(bad).is_err(), "{bad:?} is refused");
        }
    }
}
