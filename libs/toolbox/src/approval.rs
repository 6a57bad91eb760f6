//! The approval gate every shell command passes (terminal, background processes, scripts'
//! terminal calls): hard-blocked commands are refused; dangerous ones run only when the agent's
//! mode is `off`, the user allowed their patterns before ("always" for the agent, "session"
//! for this session), or the user approved this very call; otherwise the call parks the turn
//! with an approval request.

use serde_json::{Value, json};

use hermes_tools::{ApprovalMode, Interaction, ToolCtx, ToolError};

use crate::danger::{Danger, assess};

/// The user's choices, as upstream offers them.
pub const CHOICES: [&str; 4] = ["once", "session", "always", "deny"];

fn denied(why: &str) -> ToolError {
    ToolError::RespondToModel(format!(
        "BLOCKED: {why}. The user has NOT consented to this command. Do NOT retry it, do NOT rephrase it to get \
         around this, and do NOT run an equivalent; tell the user what you wanted to do and why, and continue \
         without it."
    ))
}

/// The approval request for `command`.
fn request(command: &str, dangers: &[&Danger]) -> Interaction {
    let reasons: Vec<&str> = dangers.iter().map(|d| d.description).collect();
    Interaction {
        kind: "approval",
        prompt: json!({
            "command": command,
            "pattern_keys": dangers.iter().map(|d| d.key).collect::<Vec<_>>(),
            "description": reasons.join("; "),
            "choices": CHOICES,
        }),
    }
}

/// Whether `command` may run now for `ctx`; parks the turn for approval when it needs one.
pub fn check(ctx: &ToolCtx, command: &str) -> Result<(), ToolError> {
    let dangers = assess(command);
    if let Some(hard) = dangers.iter().find(|d| d.hard) {
        return Err(ToolError::RespondToModel(format!(
            "BLOCKED: {} is never allowed ({}). Do not retry it or look for a way around it.",
            hard.description, hard.key
        )));
    }
    let interaction = &ctx.interaction;
    let needed: Vec<&Danger> = dangers.iter().filter(|d| !interaction.allowed.contains(d.key)).collect();
    if needed.is_empty() || interaction.approval_mode == ApprovalMode::Off {
        return Ok(());
    }
    match interaction.answer_for(&ctx.call_id) {
        Some(resolution) => match resolution.answer.get("choice").and_then(Value::as_str) {
            Some("once" | "session" | "always") => Ok(()),
            _ if resolution.answer.get("expired").is_some() => {
                Err(denied("nobody approved it in time, and silence is not consent"))
            }
            _ => Err(denied("the user denied it")),
        },
        None => Err(ToolError::Park(request(command, &needed))),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use hermes_core::{AgentId, SessionId, TenantId, TurnId};
    use hermes_tools::{Interactive, Resolution};

    use super::*;

    fn ctx(mode: ApprovalMode, allowed: &[&str], answer: Option<Value>) -> ToolCtx {
        #[expect(clippy::disallowed_methods, reason = "test fixture")]
        let tenant = TenantId::from_authenticated(uuid::Uuid::now_v7());
        ToolCtx {
            tenant_id: tenant,
            agent_id: AgentId::new(),
            session_id: SessionId::new(),
            turn_id: TurnId::new(),
            call_id: "c1".into(),
            interaction: Interactive {
                enabled: true,
                approval_mode: mode,
                allowed: Arc::new(allowed.iter().map(|s| (*s).to_owned()).collect()),
                resolution: answer.map(|answer| Arc::new(Resolution { call_id: "c1".into(), answer })),
            },
        }
    }

    #[test]
    fn a_dangerous_command_parks_with_its_reasons_and_choices() {
        let err = check(&ctx(ApprovalMode::Manual, &[], None), "git push --force && rm -rf dist").unwrap_err();
        let ToolError::Park(interaction) = err else { panic!("{err:?}") };
        assert_eq!(interaction.kind, "approval");
        assert_eq!(interaction.prompt["pattern_keys"], json!(["rm_recursive", "git_destructive"]));
        assert_eq!(interaction.prompt["choices"], json!(CHOICES));
        assert!(check(&ctx(ApprovalMode::Manual, &[], None), "ls -la").is_ok());
    }

    #[test]
    fn answers_allowlists_and_mode_off_decide() {
        let cmd = "rm -rf build";
        assert!(check(&ctx(ApprovalMode::Manual, &[], Some(json!({"choice": "once"}))), cmd).is_ok());
        assert!(check(&ctx(ApprovalMode::Manual, &["rm_recursive"], None), cmd).is_ok());
        assert!(check(&ctx(ApprovalMode::Off, &[], None), cmd).is_ok());
        let denied = check(&ctx(ApprovalMode::Manual, &[], Some(json!({"choice": "deny"}))), cmd).unwrap_err();
        assert!(denied.to_string().contains("the user denied it"));
        let expired = check(&ctx(ApprovalMode::Manual, &[], Some(json!({"expired": true}))), cmd).unwrap_err();
        assert!(expired.to_string().contains("silence is not consent"));
        // Allowing one pattern does not allow another in the same command.
        let both = check(&ctx(ApprovalMode::Manual, &["rm_recursive"], None), "rm -rf x; git reset --hard");
        assert!(matches!(both, Err(ToolError::Park(_))));
    }

    #[test]
    fn hard_blocks_hold_in_every_mode_and_after_any_answer() {
        for mode in [ApprovalMode::Off, ApprovalMode::Manual] {
            let err = check(&ctx(mode, &["rm_root"], Some(json!({"choice": "always"}))), "rm -rf /").unwrap_err();
            assert!(err.to_string().starts_with("BLOCKED"), "{err}");
        }
    }
}
