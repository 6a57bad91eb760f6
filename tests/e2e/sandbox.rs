//! The sandbox backend suite: every backend must pass these, through sandboxd's protocol
//! (exec, process groups, limits, files, search, background processes, checkpoints).
//! Run here against Docker and bubblewrap.

use std::sync::Arc;
use std::time::Duration;

use hermes_core::{AgentId, TenantId};
use hermes_sandbox::proto::{
    CheckpointRequest, EditFileRequest, ListProcessesRequest, PollProcessRequest, ProcessRef, ReadFileRequest, Replace,
    RestoreRequest, SearchRequest, StartProcessRequest, WaitProcessRequest, WriteFileRequest, WriteProcessRequest,
    edit_file_request,
};
use hermes_sandbox::{ExecOutput, ExecRequest, SandboxError, SandboxKey, Sandboxes};

use crate::harness::{SANDBOX_TEST_IMAGE, poll_until, unique, wait_until};

mod terminal;
use terminal::{
    a_write_to_a_program_that_does_not_read_holds_up_nothing_else,
    programs_on_a_terminal_are_answered_and_die_with_their_group,
};

/// A Docker backend with its own names and socket directory, cleaned up on drop.
pub struct DockerFixture {
    pub sandboxes: Arc<hermes_sandbox::docker::DockerSandboxes>,
    pub config: hermes_config::SandboxConfig,
}

impl DockerFixture {
    pub async fn new() -> Self {
        let name = unique("s");
        let mut config = hermes_config::SandboxConfig::default();
        config.docker.image = SANDBOX_TEST_IMAGE.into();
        config.docker.name_prefix = format!("htest-{name}");
        config.docker.ipc_dir = format!("/tmp/htest-ipc/{name}");
        config.docker.memory_mb = 256;
        let sandboxes = Arc::new(hermes_sandbox::docker::DockerSandboxes::connect(&config).await.unwrap());
        Self { sandboxes, config }
    }
}

impl Drop for DockerFixture {
    fn drop(&mut self) {
        let prefix = &self.config.docker.name_prefix;
        let _ = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "docker ps -aq --filter label=io.hermes.sandbox.owner={prefix} | xargs -r docker rm -f >/dev/null 2>&1; \
                 docker volume ls -q --filter name={prefix}-ws- | xargs -r docker volume rm >/dev/null 2>&1; \
                 rm -rf {}",
                self.config.docker.ipc_dir
            ))
            .status();
    }
}

pub fn new_key() -> SandboxKey {
    #[expect(clippy::disallowed_methods, reason = "a test tenant, not from a request")]
    let tenant = TenantId::from_authenticated(uuid::Uuid::now_v7());
    SandboxKey::shared(tenant, AgentId::new())
}

pub async fn run(s: &dyn Sandboxes, key: SandboxKey, command: &str, timeout_secs: u64) -> ExecOutput {
    let request = ExecRequest {
        command: command.into(),
        workdir: None,
        timeout: Duration::from_secs(timeout_secs),
        env: Default::default(),
    };
    hermes_sandbox::exec(s, key, request, &mut |_| {}).await.unwrap()
}

async fn exec_streams_output_in_order_with_exit_codes_env_and_workdir(s: &dyn Sandboxes) {
    let key = new_key();
    let mut chunks = Vec::new();
    let request = ExecRequest {
        command: "echo out; echo err >&2; echo \"$GREETING\"; pwd; exit 7".into(),
        workdir: Some("sub".into()),
        timeout: Duration::from_secs(20),
        env: [("GREETING".to_owned(), "hi there".to_owned())].into(),
    };
    // The workdir must exist first.
    run(s, key, "mkdir -p /workspace/sub", 20).await;
    let out = hermes_sandbox::exec(s, key, request, &mut |b| chunks.push(b.to_vec())).await.unwrap();
    assert_eq!(out.exit_code, Some(7));
    assert_eq!(out.output, "out\nerr\nhi there\n/workspace/sub\n");
    assert!(!chunks.is_empty(), "output was streamed");
    assert!(!out.timed_out);
}

async fn a_timeout_kills_the_whole_process_group(s: &dyn Sandboxes) {
    let key = new_key();
    let started = std::time::Instant::now();
    let out = run(s, key, "sleep 300 & sleep 301 & echo started; wait", 2).await;
    assert!(out.timed_out, "{out:?}");
    assert_eq!(out.exit_code, None);
    assert!(out.output.contains("started"));
    assert!(started.elapsed() < Duration::from_secs(10), "answered soon after the timeout");
    let ps = run(s, key, "ps -o pid,args | grep 'sleep 30[01]'", 20).await;
    assert_eq!(ps.output.trim(), "", "no child survived the timeout");
}

async fn a_fork_bomb_is_contained_and_the_sandbox_stays_usable(s: &dyn Sandboxes) {
    let key = new_key();
    let out = run(s, key, "bomb() { bomb | bomb & }; bomb", 5).await;
    assert!(out.timed_out || out.exit_code.is_some(), "{out:?}");
    // Whatever it left is killed with its group; the sandbox answers again.
    let after = run(s, key, "echo alive", 20).await;
    assert_eq!(after.output.trim(), "alive");
}

async fn files_stay_inside_the_workspace(s: &dyn Sandboxes) {
    let key = new_key();
    let mut grpc = s.open(key).await.unwrap().grpc();
    let write = |path: &str| WriteFileRequest { path: path.into(), content: "x".into() };
    let written = grpc.write_file(write("notes/a.txt")).await.unwrap().into_inner();
    assert_eq!(written.path, "/workspace/notes/a.txt");
    assert!(written.created);
    for outside in ["/etc/evil", "../etc/evil", "/workspace/../etc/evil", "/workspace/.hermes/x"] {
        let err = grpc.write_file(write(outside)).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::PermissionDenied, "{outside}: {err:?}");
    }
    // A symlink cannot carry a write out of the workspace.
    run(s, key, "ln -s /etc /workspace/etc-link", 20).await;
    let err = grpc.write_file(write("etc-link/evil")).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::PermissionDenied);
    // The shell cannot write outside either: the root file system is read-only.
    let out = run(s, key, "touch /etc/evil 2>&1; echo code=$?", 20).await;
    assert!(out.output.contains("code=1"), "{}", out.output);
    // /tmp is writable scratch space.
    assert!(grpc.write_file(write("/tmp/scratch")).await.is_ok());
}

async fn reads_page_with_line_numbers_and_edits_are_exact(s: &dyn Sandboxes) {
    let key = new_key();
    let mut grpc = s.open(key).await.unwrap().grpc();
    let text: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    grpc.write_file(WriteFileRequest { path: "f.txt".into(), content: text }).await.unwrap();
    let page =
        grpc.read_file(ReadFileRequest { path: "f.txt".into(), offset: 10, limit: 3 }).await.unwrap().into_inner();
    assert_eq!(page.content, "10|line 10\n11|line 11\n12|line 12\n");
    assert_eq!((page.first_line, page.last_line, page.total_lines), (10, 12, 30));
    let missing = grpc.read_file(ReadFileRequest { path: "nope".into(), offset: 0, limit: 0 }).await.unwrap_err();
    assert_eq!(missing.code(), tonic::Code::NotFound);
    run(s, key, "printf 'a\\000b' > /workspace/bin.dat", 20).await;
    let binary = grpc.read_file(ReadFileRequest { path: "bin.dat".into(), offset: 0, limit: 0 }).await.unwrap_err();
    assert!(binary.message().contains("binary"), "{binary:?}");

    let replace = |old: &str, new: &str, all: bool| EditFileRequest {
        path: "f.txt".into(),
        edit: Some(edit_file_request::Edit::Replace(Replace {
            old_string: old.into(),
            new_string: new.into(),
            replace_all: all,
        })),
    };
    let ambiguous = grpc.edit_file(replace("line 1", "x", false)).await.unwrap_err();
    assert!(ambiguous.message().contains("found 11 times"), "{ambiguous:?}");
    let edited = grpc.edit_file(replace("line 30\n", "line thirty\n", false)).await.unwrap().into_inner();
    assert!(edited.diff.contains("-line 30") && edited.diff.contains("+line thirty"), "{}", edited.diff);
    let absent = grpc.edit_file(replace("no such text", "x", false)).await.unwrap_err();
    assert_eq!(absent.code(), tonic::Code::NotFound);
    let diff = "--- f.txt\n+++ f.txt\n@@ -1,2 +1,2 @@\n-line 1\n+line one\n line 2\n";
    let patched =
        EditFileRequest { path: "f.txt".into(), edit: Some(edit_file_request::Edit::UnifiedDiff(diff.into())) };
    grpc.edit_file(patched).await.unwrap();
    let head = run(s, key, "head -n 2 /workspace/f.txt; tail -n 1 /workspace/f.txt", 20).await;
    assert_eq!(head.output, "line one\nline 2\nline thirty\n");
}

async fn search_finds_content_and_names_and_honours_gitignore(s: &dyn Sandboxes) {
    let key = new_key();
    run(
        s,
        key,
        "mkdir -p src build && printf 'fn main() {}\\nfn helper() {}\\n' > src/main.rs && \
         printf 'fn main() {}\\n' > build/gen.rs && echo build/ > .gitignore && echo 'fn x' > .hidden.rs",
        20,
    )
    .await;
    let mut grpc = s.open(key).await.unwrap().grpc();
    let content = |pattern: &str| SearchRequest { pattern: pattern.into(), ..Default::default() };
    let found = grpc.search(content(r"fn \w+\(")).await.unwrap().into_inner();
    let hits: Vec<(String, u32)> = found.hits.iter().map(|h| (h.path.clone(), h.line)).collect();
    assert_eq!(
        hits,
        [("src/main.rs".to_owned(), 1), ("src/main.rs".to_owned(), 2)],
        "ignored and hidden files skipped"
    );
    let files = grpc
        .search(SearchRequest { pattern: "*.rs".into(), files: true, ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(files.hits.iter().map(|h| h.path.as_str()).collect::<Vec<_>>(), ["src/main.rs"]);
    let bad = grpc.search(content("(")).await.unwrap_err();
    assert_eq!(bad.code(), tonic::Code::InvalidArgument);
}

async fn background_processes_belong_to_their_session_and_outlive_the_request(s: &dyn Sandboxes) {
    let key = new_key();
    let mut grpc = s.open(key).await.unwrap().grpc();
    let start =
        |cmd: &str| StartProcessRequest { command: cmd.into(), owner: "session-a".into(), ..Default::default() };
    let echo = grpc.start_process(start("while read l; do echo got:$l; done")).await.unwrap().into_inner();
    assert!(echo.running);
    let feed = WriteProcessRequest {
        id: echo.id.clone(),
        owner: "session-a".into(),
        data: b"ping".to_vec(),
        close_stdin: true,
        submit: true,
    };
    grpc.write_process(feed).await.unwrap();
    let wait = WaitProcessRequest { id: echo.id.clone(), owner: "session-a".into(), timeout_secs: 20 };
    let done = grpc.wait_process(wait).await.unwrap().into_inner();
    assert!(!done.running);
    assert_eq!(done.exit_code, Some(0));
    assert_eq!(String::from_utf8_lossy(&done.output), "got:ping\n");

    // Another session does not see it.
    let other = PollProcessRequest { id: echo.id.clone(), owner: "session-b".into(), ..Default::default() };
    assert_eq!(grpc.poll_process(other).await.unwrap_err().code(), tonic::Code::NotFound);
    let listed = grpc.list_processes(ListProcessesRequest { owner: "session-b".into() }).await.unwrap().into_inner();
    assert!(listed.processes.is_empty());

    // Polls continue where the last one stopped; kill takes the whole group.
    let ticker = grpc
        .start_process(start("sh -c 'i=0; while :; do i=$((i+1)); echo tick$i; sleep 0.2; done' & wait"))
        .await
        .unwrap()
        .into_inner();
    let poll = || PollProcessRequest {
        id: ticker.id.clone(),
        owner: "session-a".into(),
        since_last_poll: true,
        ..Default::default()
    };
    // The first ticks, once there are any (an empty poll moves nothing on).
    let first = wait_until("the first tick", async || {
        Some(grpc.poll_process(poll()).await.unwrap().into_inner()).filter(|p| !p.output.is_empty())
    })
    .await;
    // A few more ticks; the assertions below hold however many came.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let second = grpc.poll_process(poll()).await.unwrap().into_inner();
    assert!(String::from_utf8_lossy(&first.output).starts_with("tick1\n"));
    assert!(!String::from_utf8_lossy(&second.output).contains("tick1\n"), "only new output");
    assert_eq!(second.offset, first.offset + first.output.len() as u64);
    let killed =
        grpc.kill_process(ProcessRef { id: ticker.id.clone(), owner: "session-a".into() }).await.unwrap().into_inner();
    assert!(!killed.running);
    // `-e`: every process, not only those on the caller's terminal (procps' default).
    let ps = run(s, key, "ps -eo pid,args | grep 'tic[k]'", 20).await;
    assert_eq!(ps.output.trim(), "", "the group is gone");
}

async fn checkpoints_restore_the_workspace(s: &dyn Sandboxes) {
    let key = new_key();
    run(s, key, "mkdir -p d && echo one > d/a && echo keep > b && ln -s b link", 20).await;
    let mut grpc = s.open(key).await.unwrap().grpc();
    let cp = grpc.checkpoint(CheckpointRequest { reason: "before".into() }).await.unwrap().into_inner();
    assert_eq!(cp.files, 2);
    run(s, key, "echo two > d/a && rm b && echo new > c && mkdir e && echo x > e/y", 20).await;
    let restored = grpc.restore(RestoreRequest { id: String::new() }).await.unwrap().into_inner();
    assert_eq!(restored.checkpoint.unwrap().id, cp.id);
    let state = run(s, key, "cat d/a b; readlink link; ls", 20).await;
    assert_eq!(state.output, "one\nkeep\nb\nb\nd\nlink\n", "files back, additions gone");
    let err = grpc.restore(RestoreRequest { id: "cp_nope".into() }).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::NotFound);
}

async fn there_is_no_network_by_default(s: &dyn Sandboxes) {
    let key = new_key();
    let out = run(s, key, "wget -q -T 2 -O- http://169.254.169.254/latest/meta-data/ 2>&1; echo code=$?", 20).await;
    assert!(out.output.contains("code=") && !out.output.contains("code=0"), "{}", out.output);
    let out = run(s, key, "ip -o link 2>/dev/null | grep -v ' lo:' | wc -l", 20).await;
    assert_eq!(out.output.trim(), "0", "only loopback");
}

async fn dropping_a_command_kills_it(s: &dyn Sandboxes) {
    let key = new_key();
    let request = ExecRequest {
        command: "echo begun; sleep 300".into(),
        workdir: None,
        timeout: Duration::from_secs(600),
        env: Default::default(),
    };
    let client = s.open(key).await.unwrap();
    let interrupted = tokio::time::timeout(Duration::from_secs(2), client.exec(request, &mut |_| {})).await;
    assert!(interrupted.is_err(), "still running when dropped");
    // The kill follows the dropped stream: wait until it is done.
    let survivors = async || run(s, key, "ps -o pid,args | grep 'sleep 30[0]'", 20).await.output;
    poll_until(async || survivors().await.trim().is_empty().then_some(())).await;
    let ps = run(s, key, "ps -o pid,args | grep 'sleep 30[0]'", 20).await;
    assert_eq!(ps.output.trim(), "", "the interrupted command was killed");
}

async fn agents_cannot_see_each_others_workspaces(s: &dyn Sandboxes) {
    let (a, b) = (new_key(), new_key());
    run(s, a, "echo secret-of-a > /workspace/private.txt", 20).await;
    let out = run(s, b, "cat /workspace/private.txt 2>&1; ls -a /workspace", 20).await;
    assert!(!out.output.contains("secret-of-a"), "{}", out.output);
    assert!(out.output.contains("No such file"), "{}", out.output);
    let mut grpc = s.open(b).await.unwrap().grpc();
    let request = ReadFileRequest { path: "/workspace/private.txt".into(), offset: 0, limit: 0 };
    assert_eq!(grpc.read_file(request).await.unwrap_err().code(), tonic::Code::NotFound);
}

async fn the_workers_environment_never_reaches_the_sandbox(s: &dyn Sandboxes) {
    let key = new_key();
    let env = run(s, key, "env; cat /proc/1/environ 2>/dev/null | tr '\\0' '\\n'", 20).await.output;
    let ordinary = ["PATH", "HOME", "LANG", "PWD", "TERM", "SHLVL", "HOSTNAME", "USER", "_"];
    for (name, value) in std::env::vars() {
        if value.len() < 8 || ordinary.contains(&name.as_str()) {
            continue;
        }
        assert!(!env.contains(&value), "{name} of the worker's environment is visible in the sandbox:\n{env}");
    }
}

/// A spec's variables (an agent's bound secrets' placeholders) and trust reach the sandbox's
/// programs: the variables, the CA bundle the TLS clients are pointed at, and the browser's pin;
/// a changed spec makes the sandbox again.
async fn a_specs_variables_and_trust_reach_its_programs(s: &dyn Sandboxes) {
    struct Fixed(hermes_sandbox::SandboxSpec);
    impl hermes_sandbox::SpecSource for Fixed {
        fn spec(&self, _: SandboxKey) -> futures_util::future::BoxFuture<'static, hermes_sandbox::SandboxSpec> {
            let spec = self.0.clone();
            Box::pin(async move { spec })
        }
    }
    let trust = hermes_sandbox::Trust {
        pem: "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n".into(),
        spki_sha256: "c3BraS1waW4=".into(),
    };
    let env = [("GITHUB_TOKEN".to_owned(), "hermes_placeholder_0123".to_owned())].into();
    s.set_specs(std::sync::Arc::new(Fixed(hermes_sandbox::SandboxSpec {
        env,
        trust: Some(trust),
        ..Default::default()
    })));
    let command = "echo \"$GITHUB_TOKEN\"; tail -2 \"$SSL_CERT_FILE\"; cat /hermes/ipc/egress-ca.spki";
    let key = new_key();
    let out = run(s, key, command, 20).await.output;
    assert_eq!(out, "hermes_placeholder_0123\nMIIBtest\n-----END CERTIFICATE-----\nc3BraS1waW4=", "{out}");

    // A binding changed: the sandbox is made again, its programs see the new spec.
    let env = [("GITHUB_TOKEN".to_owned(), "hermes_placeholder_4567".to_owned())].into();
    s.set_specs(std::sync::Arc::new(Fixed(hermes_sandbox::SandboxSpec { env, ..Default::default() })));
    let out = run(s, key, "echo \"$GITHUB_TOKEN\"; echo \"${SSL_CERT_FILE:-none}\"", 20).await.output;
    assert_eq!(out, "hermes_placeholder_4567\nnone\n", "{out}");
}

async fn a_sandbox_that_died_is_recreated_with_its_workspace(s: &dyn Sandboxes, kill: impl AsyncFnOnce(SandboxKey)) {
    let key = new_key();
    run(s, key, "echo kept > /workspace/k", 20).await;
    kill(key).await;
    let out = run(s, key, "cat /workspace/k", 20).await;
    assert_eq!(out.output, "kept\n");
    let refused = s
        .open(key)
        .await
        .unwrap()
        .grpc()
        .read_file(ReadFileRequest { path: "/nope".into(), offset: 0, limit: 0 })
        .await;
    assert!(matches!(hermes_sandbox::status_error(refused.unwrap_err()), SandboxError::Refused(_)));
}

/// A backend under test, cleaned up on drop.
pub trait Fixture: Sized {
    async fn new() -> Self;
    fn sandboxes(&self) -> &dyn Sandboxes;
    /// Kills `key`'s sandbox behind the backend's back.
    async fn kill(&self, key: SandboxKey);
}

impl Fixture for DockerFixture {
    async fn new() -> Self {
        DockerFixture::new().await
    }
    fn sandboxes(&self) -> &dyn Sandboxes {
        &*self.sandboxes
    }
    async fn kill(&self, key: SandboxKey) {
        let docker = bollard::Docker::connect_with_local_defaults().unwrap();
        let opts = bollard::query_parameters::RemoveContainerOptions { force: true, ..Default::default() };
        docker.remove_container(&self.sandboxes.container_name(key), Some(opts)).await.unwrap();
    }
}

/// A bubblewrap backend with its own directories and cgroups.
pub struct LocalFixture {
    sandboxes: Option<Arc<hermes_sandbox::local::LocalSandboxes>>,
    config: hermes_config::SandboxConfig,
}

impl Fixture for LocalFixture {
    async fn new() -> Self {
        let name = unique("l");
        let mut config =
            hermes_config::SandboxConfig { backend: hermes_config::SandboxBackend::Local, ..Default::default() };
        config.local.name_prefix = format!("htest-{name}");
        config.local.workspaces_dir = format!("/tmp/htest-local/{name}");
        config.local.ipc_dir = format!("/tmp/htest-ipc/{name}");
        config.local.memory_mb = 256;
        config.local.sandboxd_path = crate::harness::sandboxd_bin();
        let sandboxes = hermes_sandbox::local::LocalSandboxes::new(&config).unwrap();
        Self { sandboxes: Some(Arc::new(sandboxes)), config }
    }
    fn sandboxes(&self) -> &dyn Sandboxes {
        &**self.sandboxes.as_ref().unwrap()
    }
    async fn kill(&self, key: SandboxKey) {
        let workspace = self.sandboxes.as_ref().unwrap().workspace_dir(key);
        let status = std::process::Command::new("pkill").arg("-9").arg("-f").arg(workspace).status().unwrap();
        assert!(status.success(), "the sandbox was running");
        // sandboxd dies a moment after bwrap (`--die-with-parent`): until its socket refuses,
        // a command could still reach it and break halfway.
        // This fixture's socket directories hold only the sandbox of the test at hand.
        let answering = || {
            std::fs::read_dir(&self.config.local.ipc_dir)
                .into_iter()
                .flatten()
                .flatten()
                .any(|dir| std::os::unix::net::UnixStream::connect(dir.path().join("sandboxd.sock")).is_ok())
        };
        for _ in 0..200 {
            if !answering() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!("the sandbox still answers 5 s after it was killed");
    }
}

impl LocalFixture {
    /// The backend, shared (for tools).
    pub fn shared(&self) -> Arc<dyn Sandboxes> {
        self.sandboxes.clone().unwrap()
    }

    /// `key`'s workspace on the host (`/workspace` inside).
    pub fn workspace(&self, key: SandboxKey) -> std::path::PathBuf {
        self.sandboxes.as_ref().unwrap().workspace_dir(key)
    }
}

impl Drop for LocalFixture {
    fn drop(&mut self) {
        // Dropping the backend kills its sandboxes; then their directories and cgroups go.
        drop(self.sandboxes.take());
        // Best-effort cleanup after the test (a sync Drop): a moment for the kills to land.
        std::thread::sleep(Duration::from_millis(200));
        let local = &self.config.local;
        let _ = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "rm -rf {} {}; for d in /sys/fs/cgroup/*/{p}-sandboxes /sys/fs/cgroup/{p}-sandboxes; do \
                 [ -d $d ] && rmdir $d/* $d 2>/dev/null; done; true",
                local.workspaces_dir,
                local.ipc_dir,
                p = local.name_prefix
            ))
            .status();
    }
}

/// The suite's tests for one backend.
macro_rules! backend_suite {
    ($fixture:ty) => {
        use super::*;

        backend_suite!(@tests $fixture;
            exec_streams_output_in_order_with_exit_codes_env_and_workdir,
            a_timeout_kills_the_whole_process_group,
            a_fork_bomb_is_contained_and_the_sandbox_stays_usable,
            files_stay_inside_the_workspace,
            reads_page_with_line_numbers_and_edits_are_exact,
            search_finds_content_and_names_and_honours_gitignore,
            background_processes_belong_to_their_session_and_outlive_the_request,
            programs_on_a_terminal_are_answered_and_die_with_their_group,
            a_write_to_a_program_that_does_not_read_holds_up_nothing_else,
            checkpoints_restore_the_workspace,
            there_is_no_network_by_default,
            dropping_a_command_kills_it,
            agents_cannot_see_each_others_workspaces,
            the_workers_environment_never_reaches_the_sandbox,
            a_specs_variables_and_trust_reach_its_programs
        );

        #[tokio::test]
        async fn a_sandbox_that_died_is_recreated_with_its_workspace() {
            let f = <$fixture as Fixture>::new().await;
            super::a_sandbox_that_died_is_recreated_with_its_workspace(f.sandboxes(), async |key| f.kill(key).await)
                .await;
        }
    };
    (@tests $fixture:ty; $($test:ident),*) => {
        $(
            #[tokio::test]
            async fn $test() {
                let f = <$fixture as Fixture>::new().await;
                super::$test(f.sandboxes()).await;
            }
        )*
    };
}

mod docker {
    backend_suite!(DockerFixture);

    /// Untrusted programs run as another user than sandboxd: they cannot stop it, remove or
    /// replace its socket, and what sandboxd writes for the worker is theirs to use.
    #[tokio::test]
    async fn programs_cannot_stop_sandboxd_or_take_its_socket() {
        let f = DockerFixture::new().await;
        let (s, key) = (&*f.sandboxes, new_key());
        let out = run(
            s,
            key,
            "id -u; for p in $(pidof hermes-sandboxd); do kill -9 $p 2>/dev/null && echo killed; done; \
             rm -f /hermes/ipc/sandboxd.sock 2>/dev/null && echo removed; \
             mv /hermes/ipc/sandboxd.sock /tmp/s 2>/dev/null && echo moved; \
             cat /proc/$(pidof hermes-sandboxd | cut -d' ' -f1)/environ >/dev/null 2>&1 && echo read; \
             echo done",
            20,
        )
        .await;
        assert_eq!(out.output, "1000\ndone\n", "the program is uid 1000 and reaches nothing of sandboxd's");
        assert_eq!(run(s, key, "echo still-here", 20).await.output, "still-here\n", "sandboxd kept serving");
        // A file sandboxd writes for the worker belongs to the sandbox user.
        let mut grpc = s.open(key).await.unwrap().grpc();
        grpc.write_file(WriteFileRequest { path: "mine.txt".into(), content: "x".into() }).await.unwrap();
        let owner =
            run(s, key, "stat -c %u /workspace/mine.txt && echo more >> /workspace/mine.txt && echo ok", 20).await;
        assert_eq!(owner.output, "1000\nok\n");
    }

    #[tokio::test]
    async fn a_workspace_quota_applies_where_the_storage_supports_it_and_is_skipped_elsewhere() {
        let name = unique("q");
        let mut config = hermes_config::SandboxConfig::default();
        config.docker.image = crate::harness::SANDBOX_TEST_IMAGE.into();
        config.docker.name_prefix = format!("htest-{name}");
        config.docker.ipc_dir = format!("/tmp/htest-ipc/{name}");
        config.docker.workspace_quota_mb = 64;
        let f = DockerFixture {
            sandboxes: Arc::new(hermes_sandbox::docker::DockerSandboxes::connect(&config).await.unwrap()),
            config,
        };
        let key = new_key();
        assert_eq!(run(&*f.sandboxes, key, "echo ok > /workspace/f && cat /workspace/f", 20).await.output, "ok\n");
        let docker = bollard::Docker::connect_with_local_defaults().unwrap();
        let backing = docker.info().await.unwrap().driver_status.unwrap_or_default();
        let xfs = backing.iter().any(|kv| kv.len() == 2 && kv[0] == "Backing Filesystem" && kv[1] == "xfs");
        let volume =
            docker.inspect_volume(&format!("{}-ws-{}-{}", f.config.docker.name_prefix, key.tenant, key.agent)).await;
        let size = volume.ok().and_then(|v| v.options.get("size").cloned());
        if xfs {
            assert_eq!(size.as_deref(), Some("64m"), "xfs with quotas: the workspace is limited");
        } else {
            assert_eq!(size, None, "no quota support here: the workspace works without one");
        }
    }
}

mod local {
    backend_suite!(LocalFixture);
}
