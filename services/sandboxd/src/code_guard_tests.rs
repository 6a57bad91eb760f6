//! The guard against real files: made by this test, with the modes and owners the sandbox
//! user could give them.

use std::os::unix::fs::PermissionsExt;

use super::*;

/// The uid the files a test hands to "the sandbox user" get when the test runs as root.
const AGENT: u32 = 4000;
const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The sandbox user of these tests: a stranger's uid when root (which owns the system's
/// files), else the test's own.
fn sandbox() -> RunAs {
    if nix::unistd::geteuid().is_root() {
        RunAs { uid: AGENT, gid: AGENT }
    } else {
        RunAs { uid: nix::unistd::geteuid().as_raw(), gid: nix::unistd::getegid().as_raw() }
    }
}

/// Gives `path` to the sandbox user (it is already when the test is not root).
fn hand_to_sandbox_user(path: &Path) {
    if nix::unistd::geteuid().is_root() {
        std::os::unix::fs::chown(path, Some(AGENT), Some(AGENT)).unwrap();
    }
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn guard(scratch: &[&Path]) -> Guard {
    Guard { sandbox: sandbox(), cwd: "/".into(), scratch: scratch.iter().map(|p| p.to_path_buf()).collect() }
}

fn start(guard: &Guard, command: &str, args: &[&str]) -> Result<PathBuf, Refusal> {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    guard.check_start(command, &args, &HashMap::new(), PATH)
}

fn reach(result: Result<PathBuf, Refusal>) -> Reach {
    match result {
        Err(Refusal::Reachable { reach, .. }) => reach,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// A directory of this test's, closed to others, with a script in it.
/// A [`script_dir`], when this test can make files that are not the sandbox user's (it must
/// be root); else `None`, and a test of such files has nothing to check.
fn root_script_dir() -> Option<(tempfile::TempDir, PathBuf)> {
    nix::unistd::geteuid().is_root().then(script_dir)
}

fn script_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    chmod(dir.path(), 0o755);
    let script = dir.path().join("server.sh");
    std::fs::write(&script, "#!/bin/sh\nexec cat\n").unwrap();
    chmod(&script, 0o755);
    (dir, script)
}

#[test]
fn system_programs_and_package_runners_start() {
    let guard = guard(&[]);
    let sh = start(&guard, "sh", &["-c", "exec cat >/dev/null"]).unwrap();
    assert!(sh.is_absolute() && sh.ends_with("sh"), "{sh:?}");
    // `npx -y @scope/pkg`: a word with a slash that names nothing is no path.
    start(&guard, "sh", &["-y", "@modelcontextprotocol/server-everything"]).unwrap();
    assert!(matches!(start(&guard, "no-such-program-here", &[]), Err(Refusal::NotOnPath { .. })));
    assert!(matches!(start(&guard, "", &[]), Err(Refusal::NoCommand)));
}

#[test]
fn a_program_the_sandbox_user_owns_or_can_write_is_refused() {
    let Some((dir, script)) = root_script_dir() else { return };
    let guard = guard(&[]);
    start(&guard, &script.to_string_lossy(), &[]).unwrap();
    chmod(&script, 0o757);
    assert_eq!(reach(start(&guard, &script.to_string_lossy(), &[])), Reach::Writable(script.clone()));
    chmod(&script, 0o755);
    hand_to_sandbox_user(&script);
    assert_eq!(reach(start(&guard, &script.to_string_lossy(), &[])), Reach::Owned(script.clone()));
    drop(dir);
}

#[test]
fn a_program_in_a_directory_the_sandbox_user_can_write_is_refused_unless_sticky() {
    let Some((dir, script)) = root_script_dir() else { return };
    let guard = guard(&[]);
    chmod(dir.path(), 0o777);
    let expected = Reach::Replaceable { entry: script.clone(), dir: dir.path().to_owned() };
    assert_eq!(reach(start(&guard, &script.to_string_lossy(), &[])), expected);
    // Sticky: others' entries stay theirs.
    chmod(dir.path(), 0o1777);
    start(&guard, &script.to_string_lossy(), &[]).unwrap();
    // Unless it is the workspace, or /tmp.
    let scratch = guard_with_scratch(dir.path());
    let expected = Reach::Scratch { path: script.clone(), dir: dir.path().to_owned() };
    assert_eq!(reach(start(&scratch, &script.to_string_lossy(), &[])), expected);
}

fn guard_with_scratch(dir: &Path) -> Guard {
    guard(&[dir])
}

#[test]
fn links_are_followed_and_judged_where_they_are_and_where_they_lead() {
    let Some((dir, script)) = root_script_dir() else { return };
    let guard = guard(&[]);
    let open = tempfile::tempdir().unwrap();
    chmod(open.path(), 0o777);
    // A safe link into a directory the sandbox user can write.
    let into_open = dir.path().join("into-open");
    std::os::unix::fs::symlink(open.path().join("server.sh"), &into_open).unwrap();
    std::fs::copy(&script, open.path().join("server.sh")).unwrap();
    assert!(matches!(reach(start(&guard, &into_open.to_string_lossy(), &[])), Reach::Replaceable { .. }));
    // A link the sandbox user could replace, to a safe program.
    let swappable = open.path().join("sh");
    std::os::unix::fs::symlink("/bin/sh", &swappable).unwrap();
    assert!(matches!(reach(start(&guard, &swappable.to_string_lossy(), &[])), Reach::Replaceable { .. }));
    // A loop is refused, not followed forever.
    let looping = dir.path().join("loop");
    std::os::unix::fs::symlink(&looping, &looping).unwrap();
    assert!(matches!(reach(start(&guard, &looping.to_string_lossy(), &[])), Reach::Loop(_)));
}

#[test]
fn an_interpreter_may_not_run_code_from_the_sandbox_users_reach() {
    let Some((dir, script)) = root_script_dir() else { return };
    let guard = guard(&[]);
    start(&guard, "sh", &[&script.to_string_lossy()]).unwrap();
    hand_to_sandbox_user(dir.path());
    let script = script.to_string_lossy().into_owned();
    // The script, the directory (python runs its __main__.py), a script yet to be written,
    // a path inside a shell command line.
    for args in [vec![script.as_str()], vec![dir.path().to_str().unwrap()], vec!["-c", &format!("cd / && . {script}")]]
    {
        assert!(matches!(reach(start(&guard, "sh", &args)), Reach::Owned(_)), "{args:?}");
    }
    let later = format!("{}/later.py", dir.path().display());
    assert!(matches!(reach(start(&guard, "python3", &[&later])), Reach::Owned(_) | Reach::Creatable { .. }));
}

#[test]
fn other_programs_may_be_given_data_directories_but_not_files() {
    let (dir, script) = script_dir();
    hand_to_sandbox_user(dir.path());
    hand_to_sandbox_user(&script);
    let guard = guard(&[]);
    // A filesystem server's root.
    start(&guard, "cat", &[&format!("--root={}", dir.path().display())]).unwrap();
    assert!(matches!(reach(start(&guard, "cat", &[&format!("--config={}", script.display())])), Reach::Owned(_)));
    // Where code is loaded from, in the environment: a directory counts too.
    let env = HashMap::from([("PYTHONPATH".to_owned(), dir.path().display().to_string())]);
    assert!(guard.check_start("cat", &[], &env, PATH).is_err());
    let env = HashMap::from([("DATA_DIR".to_owned(), dir.path().display().to_string())]);
    guard.check_start("cat", &[], &env, PATH).unwrap();
}

#[test]
fn a_scripts_interpreter_is_checked_too() {
    let Some((dir, script)) = root_script_dir() else { return };
    let open = tempfile::tempdir().unwrap();
    chmod(open.path(), 0o777);
    std::fs::write(&script, format!("#!{}/python -u\nprint()\n", open.path().display())).unwrap();
    let guard = guard(&[]);
    assert!(matches!(reach(start(&guard, &script.to_string_lossy(), &[])), Reach::Creatable { .. }));
    drop(dir);
}

#[test]
fn the_words_that_may_be_paths() {
    let words: Vec<&str> = path_tokens("--root=/srv/data -y @scope/pkg ./x.py x 'a b' PATH=/a:/b").collect();
    assert_eq!(words, ["/srv/data", "./x.py", "/a", "/b"]);
    assert!(is_interpreter("/usr/bin/python3.11") && is_interpreter("node") && is_interpreter("npx"));
    assert!(!is_interpreter("hermes-mcp-test-server") && !is_interpreter("cat"));
}
