//! Standing goals (`/goal TEXT`), as upstream's: the goal is set by the turn that carries it
//! (so it lands in the session the chat's message went to), and after each finished turn of a
//! session whose goal is active a judge (the agent's auxiliary model, else its main one; billed
//! with the turn) reads the goal and the end of the answer and says `{done, reason}`. Not done:
//! a continuation turn is queued (after any message a person already sent), up to
//! `worker.goal_max_turns`; then the goal pauses. A judge that fails counts as "not done"
//! (fail-open: the budget is the backstop); three unreadable answers in a row pause the goal.
//! `/goal status|pause|resume|clear` are the gateway's (see `gateway/src/goal_commands.rs`).

use std::time::Duration;

use hermes_core::outbox::OutboxPayload;
use hermes_core::{ChatMessage, GoalState, SessionId, TenantId};
use hermes_llm::{ChatModel, ChatRequest, NoDeltas};
use hermes_store::ClaimedTurn;
use hermes_store::goals::{Goal, GoalStep, continuation};
use serde_json::Value;

use crate::Runtime;
use crate::models::Models;

const JUDGE_PROMPT: &str = "You are a strict judge of whether an AI agent has reached a goal, given the goal and \
the agent's latest reply. The goal is done only if the reply plainly says it is complete, or plainly contains the \
finished deliverable, or says the goal cannot be reached, is blocked, or needs the user (then it is done, and the \
reason says what blocks it). Anything else is not done. Answer with one line of JSON and nothing else: \
{\"done\": true or false, \"reason\": \"one sentence\"}";
/// The end of the answer the judge reads.
const ANSWER_CHARS: usize = 4_000;
const GOAL_CHARS: usize = 2_000;
const JUDGE_TIMEOUT: Duration = Duration::from_secs(30);
/// Unreadable judge answers in a row that pause the goal.
const MAX_JUDGE_FAILURES: i32 = 3;

/// What the judge said of a turn.
#[derive(Debug, Clone)]
pub(crate) struct Verdict {
    /// The goal judged (a goal replaced meanwhile is not this one).
    pub goal: String,
    pub done: bool,
    pub reason: String,
    /// False when the judge answered something that is not a verdict.
    pub readable: bool,
}

/// The goal in `/goal TEXT` (not one of the gateway's `/goal status|pause|resume|clear`).
pub(crate) fn goal_in(text: &str) -> Option<&str> {
    let rest = text.trim_start().strip_prefix("/goal")?;
    let goal = rest.strip_prefix(char::is_whitespace)?.trim();
    let control = matches!(goal, "status" | "pause" | "resume" | "clear" | "stop" | "done");
    (!goal.is_empty() && !control).then_some(goal)
}

fn tail(text: &str, max: usize) -> &str {
    let skip = text.chars().count().saturating_sub(max);
    text.char_indices().nth(skip).map_or(text, |(at, _)| &text[at..])
}

/// A verdict in the judge's answer: JSON (in a code fence or among other words is fine) with
/// a boolean (or "true"/"yes"/"done") `done`.
pub(crate) fn parse_verdict(answer: &str) -> Option<(bool, String)> {
    let trimmed = answer.trim().trim_start_matches("```json").trim_start_matches("```").trim_end_matches("```");
    let value: Value = serde_json::from_str(trimmed.trim()).ok().or_else(|| {
        let (start, end) = (answer.find('{')?, answer.rfind('}')?);
        serde_json::from_str(answer.get(start..=end)?).ok()
    })?;
    let done = match &value["done"] {
        Value::Bool(b) => *b,
        Value::String(s) => matches!(s.to_ascii_lowercase().as_str(), "true" | "yes" | "done" | "1"),
        _ => return None,
    };
    let reason = value["reason"].as_str().map(str::trim).filter(|r| !r.is_empty()).unwrap_or("no reason given");
    Some((done, reason.to_owned()))
}

/// Asks the judge about the turn's `answer`. Never fails: a judge that cannot be reached or
/// read says "not done".
pub(crate) async fn judge(models: &Models, goal: &Goal, answer: &str) -> Verdict {
    let (model, model_name) = models.for_task(hermes_core::AuxiliaryTask::GoalJudge);
    let mut asked = format!("Goal:\n{}\n", tail(&goal.goal, GOAL_CHARS));
    if !goal.subgoals.is_empty() {
        // Upstream's subgoal rule: done only when the goal and every criterion are met.
        asked.push_str("\nIt is done only if every one of these is also met, with evidence in the reply:\n");
        for (i, sub) in goal.subgoals.iter().enumerate() {
            asked.push_str(&format!("{}. {sub}\n", i + 1));
        }
    }
    let request = ChatRequest {
        model: model_name,
        messages: vec![
            ChatMessage::system(JUDGE_PROMPT),
            ChatMessage::user(format!(
                "{asked}\nThe agent's latest reply (its end):\n{}\n\nIs the goal done?",
                tail(answer, ANSWER_CHARS)
            )),
        ],
        tools: std::sync::Arc::from([]),
        max_tokens: Some(200),
        settings: Default::default(),
    };
    match tokio::time::timeout(JUDGE_TIMEOUT, model.complete(&request, &mut NoDeltas)).await {
        Ok(Ok(reply)) => match parse_verdict(&reply.message.text()) {
            Some((done, reason)) => Verdict { done, reason, readable: true, goal: goal.goal.clone() },
            None => Verdict {
                done: false,
                reason: "the judge's answer could not be read".into(),
                readable: false,
                goal: goal.goal.clone(),
            },
        },
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "the goal judge failed; going on");
            Verdict {
                done: false,
                reason: "the judge could not be reached".into(),
                readable: true,
                goal: goal.goal.clone(),
            }
        }
        Err(_) => {
            Verdict { done: false, reason: "the judge took too long".into(), readable: true, goal: goal.goal.clone() }
        }
    }
}

/// The goal's next step after `verdict`.
pub(crate) fn next_step(goal: &Goal, verdict: &Verdict) -> GoalStep {
    let used = goal.turns_used + 1;
    let failures = if verdict.readable { 0 } else { goal.judge_failures + 1 };
    let step = |state, notice: String, continuation| GoalStep {
        state,
        turns_used: used,
        judge_failures: failures,
        reason: verdict.reason.clone(),
        notice: Some(notice),
        continuation,
    };
    if verdict.done {
        step(GoalState::Done, format!("✓ Goal achieved: {}", verdict.reason), None)
    } else if failures >= MAX_JUDGE_FAILURES {
        let why = format!(
            "⏸ Goal paused: the judge's answers could not be read {failures} times in a row. Give the agent an \
             auxiliary model that follows instructions, then /goal resume."
        );
        step(GoalState::Paused, why, None)
    } else if used >= goal.max_turns {
        let why = format!(
            "⏸ Goal paused — {used}/{} turns used. Use /goal resume to keep going, or /goal clear to stop.",
            goal.max_turns
        );
        step(GoalState::Paused, why, None)
    } else {
        let notice = format!("↻ Continuing toward goal ({used}/{}): {}", goal.max_turns, verdict.reason);
        step(GoalState::Active, notice, Some(continuation(&goal.goal, &goal.subgoals)))
    }
}

/// Sets the goal a `/goal TEXT` turn carries, tells its chat, and returns the text to run.
pub(crate) async fn set_from_turn(rt: &Runtime, tenant: TenantId, turn: &ClaimedTurn, goal: &str) {
    let max = i32::try_from(rt.ctx.config.worker.goal_max_turns).unwrap_or(20);
    if let Err(e) = rt.ctx.store.conversations().set_goal(tenant, turn.session_id, goal, max).await {
        tracing::warn!(error = %e, "cannot set the goal; the turn runs without it");
        return;
    }
    let notice = format!("⊙ Goal set ({max}-turn budget): {goal}");
    if let Ok(Some(dest)) = rt.ctx.store.automation().turn_reply_to(tenant, turn.turn_id).await {
        let key = format!("goal-set:{}", turn.turn_id);
        if let Err(e) = rt.ctx.store.chat().enqueue_outbox(tenant, &dest, &key, &OutboxPayload::text(notice)).await {
            tracing::warn!(error = %e, "cannot tell the chat the goal is set");
        }
    }
}

/// Applies the judge's verdict after the turn's outcome is stored.
pub(crate) async fn advance(rt: &Runtime, tenant: TenantId, turn: &ClaimedTurn, session: SessionId, verdict: Verdict) {
    let store = &rt.ctx.store;
    let reply_to = store.automation().turn_reply_to(tenant, turn.turn_id).await.ok().flatten();
    let ids = (turn.agent_id, session, turn.turn_id);
    match store
        .conversations()
        .goal_step(tenant, ids, reply_to.as_ref(), |goal| {
            (goal.goal == verdict.goal).then(|| next_step(goal, &verdict))
        })
        .await
    {
        Ok(true) => {
            metrics::counter!("hermes_goal_continuations_total").increment(1);
            let work = hermes_queue::SessionWork { tenant_id: tenant, session_id: session };
            if let Err(e) = rt.ctx.broker.publish_work(&work).await {
                tracing::warn!(error = %e, "cannot signal the goal's next turn; the reaper will");
            }
        }
        Ok(false) => {}
        Err(e) => tracing::warn!(error = %e, "cannot advance the goal"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_store::goals::CONTINUATION_MARKER;

    fn goal(used: i32, failures: i32) -> Goal {
        Goal {
            goal: "ship it".into(),
            subgoals: vec![],
            state: GoalState::Active,
            turns_used: used,
            max_turns: 20,
            judge_failures: failures,
            last_reason: None,
            updated_at: chrono::Utc::now(),
        }
    }

    #[test]
    fn the_judges_answer_is_read_leniently_and_nonsense_is_not_a_verdict() {
        assert_eq!(parse_verdict(r#"{"done": true, "reason": "Shipped."}"#), Some((true, "Shipped.".into())));
        assert_eq!(parse_verdict("```json\n{\"done\": \"yes\", \"reason\": \"ok\"}\n```"), Some((true, "ok".into())));
        assert_eq!(
            parse_verdict("Verdict: {\"done\": false} because more is needed"),
            Some((false, "no reason given".into()))
        );
        assert_eq!(parse_verdict("DONE"), None);
        assert_eq!(parse_verdict(r#"{"reason": "missing done"}"#), None);
    }

    #[test]
    fn a_goal_goes_on_until_done_or_out_of_turns_and_an_unreadable_judge_pauses_it_at_three() {
        let going = Verdict { done: false, reason: "tests still fail".into(), readable: true, goal: "ship it".into() };
        let step = next_step(&goal(0, 0), &going);
        assert_eq!((step.state, step.turns_used), (GoalState::Active, 1));
        assert_eq!(step.notice.as_deref(), Some("↻ Continuing toward goal (1/20): tests still fail"));
        assert!(step.continuation.unwrap().starts_with(CONTINUATION_MARKER));
        let last = next_step(&goal(19, 0), &going);
        assert_eq!((last.state, last.continuation.is_none()), (GoalState::Paused, true));
        assert!(last.notice.unwrap().starts_with("⏸ Goal paused — 20/20 turns used."));
        let done = next_step(&goal(3, 0), &Verdict { done: true, reason: "Shipped.".into(), ..going.clone() });
        assert_eq!((done.state, done.notice.as_deref()), (GoalState::Done, Some("✓ Goal achieved: Shipped.")));
        let garbled = Verdict { reason: "unreadable".into(), readable: false, ..going.clone() };
        assert_eq!(next_step(&goal(1, 1), &garbled).state, GoalState::Active);
        assert_eq!(next_step(&goal(1, 2), &garbled).state, GoalState::Paused);
        assert_eq!(next_step(&goal(1, 2), &going).judge_failures, 0);
    }

    #[test]
    fn only_goal_text_sets_a_goal() {
        assert_eq!(goal_in("/goal make the tests pass"), Some("make the tests pass"));
        assert_eq!(goal_in("/goal status"), None);
        assert_eq!(goal_in("/goal"), None);
        assert_eq!(goal_in("/goals x"), None);
    }
}
