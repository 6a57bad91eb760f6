use hermes_core::{ChatMessage, Role, ToolCall, ToolCallFunction};
use proptest::prelude::*;

use super::*;

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        kind: "function".into(),
        function: ToolCallFunction { name: "t".into(), arguments: "{}".into() },
    }
}

fn assistant_calls(ids: &[&str]) -> ChatMessage {
    ChatMessage { tool_calls: ids.iter().map(|i| call(i)).collect(), content: None, ..ChatMessage::assistant("") }
}

/// The invariants every provider needs.
fn assert_well_formed(out: &[ChatMessage]) {
    let body: Vec<&ChatMessage> = out.iter().skip_while(|m| m.role == Role::System).collect();
    assert!(body.iter().all(|m| m.role != Role::System), "system only at the start");
    if let Some(first) = body.first() {
        assert_eq!(first.role, Role::User, "the conversation starts with the user");
    }
    let mut i = 0;
    while i < body.len() {
        let m = body[i];
        match m.role {
            Role::Tool => panic!("tool result without its call at {i}"),
            Role::Assistant if !m.tool_calls.is_empty() => {
                for (k, c) in m.tool_calls.iter().enumerate() {
                    let r = body.get(i + 1 + k).expect("a result for every call");
                    assert_eq!(r.role, Role::Tool);
                    assert_eq!(r.tool_call_id.as_deref(), Some(c.id.as_str()), "results in call order");
                }
                i += 1 + m.tool_calls.len();
                if let Some(next) = body.get(i) {
                    assert_ne!(next.role, Role::Tool, "no extra results");
                }
            }
            role => {
                if let Some(next) = body.get(i + 1) {
                    assert!(!(next.role == role && next.tool_calls.is_empty()), "{role:?} twice in a row at {i}");
                }
                i += 1;
            }
        }
    }
}

#[test]
fn a_call_without_its_result_gets_a_stand_in_and_stray_results_go() {
    let msgs = vec![
        ChatMessage::system("sys"),
        ChatMessage::user("do it"),
        assistant_calls(&["a", "b"]),
        ChatMessage::tool_result("b", "t", "B done"),
        ChatMessage::tool_result("zzz", "t", "orphan"),
        ChatMessage::user("and now?"),
    ];
    let out = normalize(&msgs);
    assert_well_formed(&out);
    let texts: Vec<String> = out.iter().map(ChatMessage::text).collect();
    assert_eq!(texts[3], MISSING_RESULT);
    assert_eq!(texts[4], "B done");
    assert!(!texts.iter().any(|t| t == "orphan"));
}

#[test]
fn same_role_runs_merge_and_a_leading_assistant_gets_a_user_before_it() {
    let msgs = vec![ChatMessage::assistant("hello"), ChatMessage::user("a"), ChatMessage::user("b")];
    let out = normalize(&msgs);
    assert_well_formed(&out);
    assert_eq!(out.len(), 3);
    assert_eq!(out[2].text(), "a\n\nb");
}

fn arb_message() -> impl Strategy<Value = ChatMessage> {
    let ids = prop::sample::select(vec!["x", "y", "z"]);
    prop_oneof![
        Just(ChatMessage::system("s")),
        "[a-c]{0,3}".prop_map(ChatMessage::user),
        "[a-c]{0,3}".prop_map(ChatMessage::assistant),
        prop::collection::vec(ids.clone(), 1..3).prop_map(|v| assistant_calls(&v)),
        ids.prop_map(|id| ChatMessage::tool_result(id, "t", "r")),
    ]
}

proptest! {
    #[test]
    fn any_history_comes_out_well_formed(msgs in prop::collection::vec(arb_message(), 0..24)) {
        let out = normalize(&msgs);
        assert_well_formed(&out);
        // Normalising twice changes nothing.
        prop_assert_eq!(normalize(&out), out);
    }
}
