use super::*;

fn g() -> Guardrails {
    Guardrails::new(GuardrailLimits::default())
}

#[test]
fn the_same_failing_call_warns_at_two_and_is_blocked_at_five() {
    let mut g = g();
    let args = r#"{"command":"make"}"#;
    assert_eq!(g.after("terminal", args, false, false, "err"), Decision::Allow);
    assert!(matches!(g.after("terminal", args, false, false, "err"), Decision::Warn(_)));
    // Key order does not make it a different call.
    assert_eq!(g.before("terminal", r#"{ "command" : "make" }"#), Decision::Allow);
    g.after("terminal", args, false, false, "err");
    assert_eq!(g.before("terminal", args), Decision::Allow, "the 4th may still run");
    // (a success of another call in between resets the tool's run of failures, not this one)
    g.after("terminal", r#"{"command":"ls"}"#, false, true, "ok");
    g.after("terminal", args, false, false, "err");
    assert!(matches!(g.before("terminal", args), Decision::Block(_)), "the 5th is blocked");
    assert_eq!(g.before("terminal", r#"{"command":"make -k"}"#), Decision::Allow);
}

#[test]
fn a_tool_failing_with_any_arguments_warns_at_three_and_halts_at_eight() {
    let mut g = g();
    let mut decisions = Vec::new();
    for i in 0..8 {
        decisions.push(g.after("web_search", &format!(r#"{{"q":"{i}"}}"#), true, false, "err"));
    }
    assert_eq!(decisions[0], Decision::Allow);
    assert!(matches!(decisions[2], Decision::Warn(_)), "{decisions:?}");
    assert!(decisions[3..7].iter().all(|d| *d == Decision::Allow));
    assert!(matches!(decisions[7], Decision::Halt(_)));
}

#[test]
fn a_success_resets_the_failure_run() {
    let mut g = g();
    for i in 0..7 {
        g.after("terminal", &format!(r#"{{"c":{i}}}"#), false, false, "err");
    }
    g.after("terminal", r#"{"c":"ok"}"#, false, true, "fine");
    assert_eq!(g.after("terminal", r#"{"c":99}"#, false, false, "err"), Decision::Allow);
}

#[test]
fn a_read_only_tool_returning_the_same_result_warns_at_two_and_is_blocked_at_five() {
    let mut g = g();
    let args = r#"{"path":"a.txt"}"#;
    assert_eq!(g.after("read_file", args, true, true, "same"), Decision::Allow);
    assert!(matches!(g.after("read_file", args, true, true, "same"), Decision::Warn(_)));
    g.after("read_file", args, true, true, "same");
    assert_eq!(g.before("read_file", args), Decision::Allow);
    g.after("read_file", args, true, true, "same");
    assert!(matches!(g.before("read_file", args), Decision::Block(_)));
    // A changed result starts over; a mutating tool is never "no progress".
    g.after("read_file", args, true, true, "changed");
    assert_eq!(g.before("read_file", args), Decision::Allow);
    for _ in 0..6 {
        assert_eq!(g.after("terminal", r#"{"c":"date"}"#, false, true, "same"), Decision::Allow);
    }
    assert_eq!(g.before("terminal", r#"{"c":"date"}"#), Decision::Allow);
}

#[test]
fn without_hard_stop_only_warnings_remain() {
    let mut g = Guardrails::new(GuardrailLimits { hard_stop: false, ..Default::default() });
    for _ in 0..10 {
        let d = g.after("terminal", "{}", false, false, "err");
        assert!(!matches!(d, Decision::Halt(_)));
    }
    assert_eq!(g.before("terminal", "{}"), Decision::Allow);
}
