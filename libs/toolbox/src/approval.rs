//! The approval gate every shell command passes (terminal, background processes, scripts'
//! terminal calls): hard-blocked commands are refused; dangerous ones run only when the agent's
//! mode is `off`, the user allowed their patterns before ("always" for the agent, "session"
//! for this session), or the user approved this very call; otherwise the call parks the turn
//! with an approval request.

use serde_json::json;

use hermes_core::{ApprovalChoice, InteractionAnswer, InteractionKind};
use hermes_tools::{ApprovalMode, Interaction, ToolCtx, ToolError, Verdict};

use crate::danger::{Danger, assess};

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
        kind: InteractionKind::Approval,
        prompt: json!({
            "command": command,
            "pattern_keys": dangers.iter().map(|d| d.key).collect::<Vec<_>>(),
            "description": reasons.join("; "),
            "choices": ApprovalChoice::ALL,
        }),
    }
}

/// Whether `command` may run now for `ctx`; parks the turn for approval when it needs one.
/// In `smart` mode the reviewer decides first, and only what it is unsure of reaches the user.
pub async fn check(ctx: &ToolCtx, command: &str) -> Result<(), ToolError> {
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
        Some(resolution) => match resolution.answer {
            InteractionAnswer::Approval { choice } if choice.allows() => Ok(()),
            InteractionAnswer::Expired { .. } => Err(denied("nobody approved it in time, and silence is not consent")),
            _ => Err(denied("the user denied it")),
        },
        None => {
            if interaction.approval_mode == ApprovalMode::Smart
                && let Some(judge) = &interaction.judge
            {
                let reasons: Vec<&str> = needed.iter().map(|d| d.description).collect();
                let keys: Vec<&'static str> = needed.iter().map(|d| d.key).collect();
                match judge.0.judge(command, &reasons.join("; "), &keys).await {
                    Verdict::Approve => return Ok(()),
                    Verdict::Deny => return Err(denied("the safety review denied it")),
                    Verdict::Escalate => {}
                }
            }
            Err(ToolError::Park(request(command, &needed)))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use hermes_tools::{Interactive, Resolution};

    use super::*;

    fn ctx(mode: ApprovalMode, allowed: &[&str], answer: Option<serde_json::Value>) -> ToolCtx {
        ToolCtx {
            interaction: Interactive {
                enabled: true,
                approval_mode: mode,
                allowed: Arc::new(allowed.iter().map(|s| (*s).to_owned()).collect()),
                resolution: answer.map(|answer| {
                    Arc::new(Resolution { call_id: "c1".into(), answer: serde_json::from_value(answer).unwrap() })
                }),
                judge: None,
            },
            ..ToolCtx::for_tests("c1")
        }
    }

    #[tokio::test]
    async fn a_dangerous_command_parks_with_its_reasons_and_choices() {
        let err = check(&ctx(ApprovalMode::Manual, &[], None), "git push --force && rm -rf dist").await.unwrap_err();
        let ToolError::Park(interaction) = err else { panic!("{err:?}") };
        assert_eq!(interaction.kind, InteractionKind::Approval);
        assert_eq!(interaction.prompt["pattern_keys"], json!(["rm_recursive", "git_destructive"]));
        assert_eq!(interaction.prompt["choices"], json!(["once", "session", "always", "deny"]));
        assert!(check(&ctx(ApprovalMode::Manual, &[], None), "ls -la").await.is_ok());
    }

    #[tokio::test]
    async fn answers_allowlists_and_mode_off_decide() {
        let cmd = "rm -rf build";
        assert!(check(&ctx(ApprovalMode::Manual, &[], Some(json!({"choice": "once"}))), cmd).await.is_ok());
        assert!(check(&ctx(ApprovalMode::Manual, &["rm_recursive"], None), cmd).await.is_ok());
        assert!(check(&ctx(ApprovalMode::Off, &[], None), cmd).await.is_ok());
        let denied = check(&ctx(ApprovalMode::Manual, &[], Some(json!({"choice": "deny"}))), cmd).await.unwrap_err();
        assert!(denied.to_string().contains("the user denied it"));
        let expired = check(&ctx(ApprovalMode::Manual, &[], Some(json!({"expired": true}))), cmd).await.unwrap_err();
        assert!(expired.to_string().contains("silence is not consent"));
        // Allowing one pattern does not allow another in the same command.
        let both = check(&ctx(ApprovalMode::Manual, &["rm_recursive"], None), "rm -rf x; git reset --hard").await;
        assert!(matches!(both, Err(ToolError::Park(_))));
    }

    #[tokio::test]
    async fn hard_blocks_hold_in_every_mode_and_after_any_answer() {
        for mode in [ApprovalMode::Off, ApprovalMode::Manual] {
            let err = check(&ctx(mode, &["rm_root"], Some(json!({"choice": "always"}))), "rm -rf /").await.unwrap_err();
            assert!(err.to_string().starts_with("BLOCKED"), "{err}");
        }
    }

    /// Always says the same, and records what it was shown.
    struct Fixed(Verdict, std::sync::Mutex<Vec<String>>);

    impl hermes_tools::ApprovalJudge for Fixed {
        fn judge<'a>(
            &'a self,
            command: &'a str,
            reasons: &'a str,
            _: &'a [&'static str],
        ) -> futures_util::future::BoxFuture<'a, Verdict> {
            self.1.lock().unwrap().push(format!("{command} | {reasons}"));
            Box::pin(async move { self.0.clone() })
        }
    }

    #[tokio::test]
    async fn smart_mode_lets_the_reviewer_decide_and_asks_the_user_only_when_it_is_unsure() {
        let cmd = "rm -rf build";
        for (verdict, parks, runs) in
            [(Verdict::Approve, false, true), (Verdict::Deny, false, false), (Verdict::Escalate, true, false)]
        {
            let judge = Arc::new(Fixed(verdict.clone(), Default::default()));
            let mut ctx = ctx(ApprovalMode::Smart, &[], None);
            ctx.interaction.judge = Some(hermes_tools::Judge(judge.clone()));
            let result = check(&ctx, cmd).await;
            assert_eq!(result.is_ok(), runs, "{verdict:?}");
            assert_eq!(matches!(result, Err(ToolError::Park(_))), parks, "{verdict:?}");
            assert_eq!(*judge.1.lock().unwrap(), vec!["rm -rf build | recursive delete".to_owned()]);
        }
        // Hard blocks never reach the reviewer.
        let judge = Arc::new(Fixed(Verdict::Approve, Default::default()));
        let mut ctx = ctx(ApprovalMode::Smart, &[], None);
        ctx.interaction.judge = Some(hermes_tools::Judge(judge.clone()));
        assert!(check(&ctx, "mkfs.ext4 /dev/sdb").await.is_err());
        assert!(judge.1.lock().unwrap().is_empty());
    }
}
