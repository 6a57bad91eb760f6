//! Programs on a terminal (`terminal(pty=true)`): a program that asks only when it has a
//! terminal is answered, the terminal's end-of-file key ends its input, and a kill takes
//! everything the program started.

use hermes_sandbox::Sandboxes;
use hermes_sandbox::proto::{
    PollProcessRequest, ProcessRef, StartProcessRequest, WaitProcessRequest, WriteProcessRequest,
};

use super::{new_key, run};
use crate::harness::wait_until;

const OWNER: &str = "session-t";

fn keys(id: &str, data: &str, submit: bool, close: bool) -> WriteProcessRequest {
    WriteProcessRequest { id: id.into(), owner: OWNER.into(), data: data.into(), submit, close_stdin: close }
}

pub(super) async fn programs_on_a_terminal_are_answered_and_die_with_their_group(s: &dyn Sandboxes) {
    let key = new_key();
    let mut grpc = s.open(key).await.unwrap().grpc();
    let start =
        |cmd: &str| StartProcessRequest { command: cmd.into(), owner: OWNER.into(), pty: true, ..Default::default() };
    // It asks only when its input is a terminal, and sees the terminal's size.
    let asker = "if [ -t 0 ]; then echo \"tty $(stty size) $TERM\"; printf 'name? '; read n; echo \"hi $n\"; \
                 else echo no-tty; fi";
    let p = grpc.start_process(start(asker)).await.unwrap().into_inner();
    assert!(p.running && p.pty);
    let poll = || PollProcessRequest { id: p.id.clone(), owner: OWNER.into(), ..Default::default() };
    wait_until("the question", async || {
        let seen = grpc.poll_process(poll()).await.unwrap().into_inner();
        String::from_utf8_lossy(&seen.output).contains("name? ").then_some(())
    })
    .await;
    grpc.write_process(keys(&p.id, "Ann", true, false)).await.unwrap();
    let wait = |id: &str| WaitProcessRequest { id: id.into(), owner: OWNER.into(), timeout_secs: 20 };
    let done = grpc.wait_process(wait(&p.id)).await.unwrap().into_inner();
    assert_eq!(done.exit_code, Some(0));
    let shown = String::from_utf8_lossy(&done.output);
    // The terminal echoes what was typed and ends lines with \r\n.
    assert_eq!(shown, "tty 30 120 xterm-256color\r\nname? Ann\r\nhi Ann\r\n");

    // "close" on a terminal is the ^D key: `cat` gets the end of its input and exits.
    let cat = grpc.start_process(start("cat; echo ended")).await.unwrap().into_inner();
    grpc.write_process(keys(&cat.id, "line", true, true)).await.unwrap();
    let done = grpc.wait_process(wait(&cat.id)).await.unwrap().into_inner();
    assert_eq!(done.exit_code, Some(0), "{:?}", String::from_utf8_lossy(&done.output));
    assert!(String::from_utf8_lossy(&done.output).ends_with("ended\r\n"));
    // Its input can still be written after ^D: a terminal stays open.
    let after = grpc.write_process(keys(&cat.id, "x", false, false)).await.unwrap_err();
    assert_eq!(after.code(), tonic::Code::FailedPrecondition, "an ended process takes no input");

    // A kill takes the terminal's whole session, background jobs too.
    let server = grpc.start_process(start("sleep 4242 & sleep 4343")).await.unwrap().into_inner();
    wait_until("both sleeps", async || {
        let ps = run(s, key, "ps -eo args | grep -c '^sleep 4[23]4[23]'", 20).await;
        (ps.output.trim() == "2").then_some(())
    })
    .await;
    let killed =
        grpc.kill_process(ProcessRef { id: server.id.clone(), owner: OWNER.into() }).await.unwrap().into_inner();
    assert!(!killed.running);
    let ps = run(s, key, "ps -eo args | grep 'sleep 4[23]4[23]'", 20).await;
    assert_eq!(ps.output.trim(), "", "the terminal's session is gone");

    // The leader's end ends its session, as a terminal closing does: a job it left in the
    // background does not keep the process "running" (nor its slot taken).
    let leaver = grpc.start_process(start("sleep 4545 & echo left")).await.unwrap().into_inner();
    let done = grpc.wait_process(wait(&leaver.id)).await.unwrap().into_inner();
    assert!(!done.running, "ended with its leader");
    assert_eq!(done.exit_code, Some(0));
    let ps = run(s, key, "ps -eo args | grep 'sleep 454[5]'", 20).await;
    assert_eq!(ps.output.trim(), "", "its background job went with it");
}

/// A program that does not read its input cannot hold up the process's other calls: a write
/// waits for it alone (at most 10 s), and a kill meanwhile answers at once.
pub(super) async fn a_write_to_a_program_that_does_not_read_holds_up_nothing_else(s: &dyn Sandboxes) {
    let key = new_key();
    let mut grpc = s.open(key).await.unwrap().grpc();
    let start = StartProcessRequest { command: "sleep 300".into(), owner: OWNER.into(), ..Default::default() };
    let deaf = grpc.start_process(start).await.unwrap().into_inner();
    // Far more than a pipe holds: the write waits.
    let flood = WriteProcessRequest { data: vec![b'x'; 1 << 20], ..keys(&deaf.id, "", false, false) };
    let mut writer = grpc.clone();
    let writing = tokio::spawn(async move { writer.write_process(flood).await });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let killing = grpc.kill_process(ProcessRef { id: deaf.id.clone(), owner: OWNER.into() });
    let killed = tokio::time::timeout(std::time::Duration::from_secs(8), killing).await;
    let killed = killed.expect("the kill answers while the write waits").unwrap().into_inner();
    assert!(!killed.running);
    let written = writing.await.unwrap();
    assert!(written.is_err(), "the write fails: the program is gone");
}
