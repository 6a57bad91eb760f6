use super::*;

fn watch(patterns: &[&str], notify_on_complete: bool, notices: i32, last: Option<i64>) -> Watch {
    #[expect(clippy::disallowed_methods, reason = "test fixture")]
    let tenant = hermes_core::TenantId::from_authenticated(uuid::Uuid::now_v7());
    Watch {
        tenant_id: tenant,
        id: uuid::Uuid::now_v7(),
        agent_id: hermes_core::AgentId::new(),
        session_id: hermes_core::SessionId::new(),
        workspace_bits: None,
        process_id: "proc_1".into(),
        command: "npm run build\n  --watch".into(),
        patterns: patterns.iter().map(|p| (*p).to_owned()).collect(),
        notify_on_complete,
        output_offset: 10,
        notices,
        last_notice_at: last.map(|secs| Utc::now() - chrono::TimeDelta::seconds(secs)),
        created_at: Utc::now(),
    }
}

fn status(running: bool, output: &str) -> Seen {
    let tail = if running { String::new() } else { format!("older lines\n{output}") };
    Seen::Status { running, exit_code: (!running).then_some(2), signal: 0, output: output.into(), end: 50, tail }
}

#[test]
fn an_end_is_told_with_its_exit_code_and_quoted_output_once() {
    let step = next_step(&watch(&[], true, 0, None), &status(false, "compiling\n```\nerror: boom\n"), Utc::now());
    let WatchStep::Notify { offset, notice, done, .. } = step else { panic!("{step:?}") };
    assert_eq!((offset, done), (50, true));
    assert!(
        notice.starts_with("[Background process proc_1 (`npm run build --watch`) finished: exit code 2."),
        "{notice}"
    );
    assert!(
        notice.ends_with("````\nolder lines\ncompiling\n```\nerror: boom\n````"),
        "the end of all its output, quoted so it cannot close its fence: {notice}"
    );
    assert_eq!(
        next_step(&watch(&[], true, 0, None), &status(true, "more"), Utc::now()),
        WatchStep::Again { offset: 50 }
    );
    assert_eq!(next_step(&watch(&[], false, 0, None), &status(false, "x"), Utc::now()), WatchStep::Done);
}

#[test]
fn a_watched_text_wakes_the_agent_at_most_every_15_s_and_three_times() {
    let ready = status(true, "starting\nserver READY on :3000\n");
    let step = next_step(&watch(&["READY"], false, 0, None), &ready, Utc::now());
    let WatchStep::Notify { notice, done, patterns, .. } = step else { panic!("{step:?}") };
    assert!(!done && patterns == ["READY"], "still watched");
    assert!(notice.contains("printed “READY”") && notice.ends_with("```\nserver READY on :3000\n```"), "{notice}");
    // Too soon after the last notice: looked at again later, from the same place.
    assert_eq!(next_step(&watch(&["READY"], false, 1, Some(5)), &ready, Utc::now()), WatchStep::Again { offset: 10 });
    // The third notice is the last of its kind.
    let third = next_step(&watch(&["READY"], false, 2, Some(20)), &ready, Utc::now());
    assert!(matches!(third, WatchStep::Notify { ref patterns, done: false, .. } if patterns.is_empty()), "{third:?}");
    assert_eq!(
        next_step(&watch(&["READY"], false, 0, None), &status(true, "nothing yet"), Utc::now()),
        WatchStep::Again { offset: 50 }
    );
}

#[test]
fn a_process_that_is_gone_is_told_only_to_whoever_waits_for_its_end() {
    let gone = next_step(&watch(&[], true, 0, None), &Seen::Gone, Utc::now());
    assert!(matches!(gone, WatchStep::Notify { done: true, ref notice, .. } if notice.contains("is gone")), "{gone:?}");
    assert_eq!(next_step(&watch(&["x"], false, 0, None), &Seen::Gone, Utc::now()), WatchStep::Done);
    assert_eq!(next_step(&watch(&["x"], true, 0, None), &Seen::Unknown, Utc::now()), WatchStep::Again { offset: 10 });
}

#[test]
fn a_watch_ends_after_six_hours() {
    let mut old = watch(&[], true, 0, None);
    old.created_at = Utc::now() - chrono::TimeDelta::hours(7);
    let step = next_step(&old, &status(true, "still going"), Utc::now());
    assert!(
        matches!(step, WatchStep::Notify { done: true, ref notice, .. } if notice.contains("no longer watched")),
        "{step:?}"
    );
    old.notify_on_complete = false;
    assert_eq!(next_step(&old, &status(true, "x"), Utc::now()), WatchStep::Done);
}
