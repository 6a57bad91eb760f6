//! Sessions as `/api/sessions` (and the admin console) show them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use hermes_core::{AgentId, SessionId, SessionSource};

/// A session as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct Session {
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub id: SessionId,
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub agent_id: AgentId,
    /// The agent's name: the `model` clients use.
    pub model: String,
    pub title: Option<String>,
    /// `api`, `cron`, `webhook`, `subagent`, or the chat platform.
    #[schema(value_type = String)]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "String"))]
    pub source: SessionSource,
    #[schema(value_type = Option<String>, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::MaybeId"))]
    pub parent_session_id: Option<SessionId>,
    /// How the session began: `fork`, `compaction` or `subagent` (none for a first session).
    pub lineage: Option<String>,
    pub message_count: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A session and its whole family.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SessionWithLineage {
    #[serde(flatten)]
    pub session: Session,
    /// The whole family, root first, with depths.
    pub lineage_tree: Vec<LineageNode>,
}

/// One session of a lineage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct LineageNode {
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(rename = "id", try_from = "crate::rows::Id"))]
    pub session_id: SessionId,
    #[schema(value_type = Option<String>, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::MaybeId"))]
    pub parent_session_id: Option<SessionId>,
    /// How it continues its parent: `compaction`, `fork` or `subagent`; `null` for the root.
    pub lineage: Option<String>,
    pub title: Option<String>,
    pub created_at: DateTime<Utc>,
    /// Steps from the root.
    pub depth: i32,
}

/// A stored message in OpenAI form, with its sequence number in the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct NumberedMessage {
    /// `role`, `content` and, as OpenAI has them, `tool_calls`, `tool_call_id`, `name`.
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub message: hermes_core::ChatMessage,
    pub seq: i32,
}

/// A session's standing goal (`/goal`): the agent keeps working toward it, one turn after
/// another, until a judge says it is done or its budget of turns runs out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct SessionGoal {
    pub goal: String,
    /// Criteria added along the way (`/subgoal`), in order: all must be met too.
    pub subgoals: Vec<String>,
    /// `active`, `paused` or `done`.
    #[schema(value_type = String)]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "String"))]
    pub state: hermes_core::GoalState,
    pub turns_used: i32,
    pub max_turns: i32,
    /// Unreadable judge answers in a row (three pause the goal).
    pub judge_failures: i32,
    /// What the judge said last.
    pub last_reason: Option<String>,
    pub updated_at: DateTime<Utc>,
}

/// `PUT /api/sessions/{id}/goal`: a new goal (it replaces any other), worked on from now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetGoal {
    pub goal: String,
    /// Turns it may take before it pauses (at most the installation's `worker.goal_max_turns`,
    /// which is also the default).
    #[serde(default)]
    pub max_turns: Option<i32>,
    /// Criteria that must be met too.
    #[serde(default)]
    pub subgoals: Vec<String>,
}

/// The longest goal or criterion taken, in characters.
pub const MAX_GOAL_CHARS: usize = 4_000;
/// Criteria a goal may have.
pub const MAX_SUBGOALS: usize = 20;

impl SetGoal {
    /// The goal's budget of turns, once its text is checked (not empty, not too long) and its
    /// `max_turns` is within `ceiling` (the installation's, also the default). `Err`: the field
    /// at fault and why.
    pub fn budget(&self, ceiling: i32) -> Result<i32, (&'static str, String)> {
        if self.goal.trim().is_empty() {
            return Err(("goal", "goal is the text of what to reach; it is empty".into()));
        }
        let too_long = |s: &String| s.chars().count() > MAX_GOAL_CHARS;
        if too_long(&self.goal) || self.subgoals.iter().any(too_long) {
            return Err(("goal", format!("a goal or criterion is at most {MAX_GOAL_CHARS} characters")));
        }
        if self.subgoals.len() > MAX_SUBGOALS || self.subgoals.iter().any(|s| s.trim().is_empty()) {
            return Err(("subgoals", format!("at most {MAX_SUBGOALS} criteria, none empty")));
        }
        match self.max_turns {
            None => Ok(ceiling),
            Some(n) if (1..=ceiling).contains(&n) => Ok(n),
            Some(_) => Err(("max_turns", format!("max_turns is from 1 to {ceiling}"))),
        }
    }
}

/// `PATCH /api/sessions/{id}/goal`: pause the goal, or resume it with a fresh budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GoalChange {
    /// `active` or `paused`.
    #[schema(value_type = String)]
    pub state: hermes_core::GoalState,
}

/// A goal set, and the turn that works toward it first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GoalStarted {
    #[serde(flatten)]
    pub goal: SessionGoal,
    /// The run that takes the next step, if one was queued: follow it at
    /// `/v1/runs/{run_id}/events`.
    pub run_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn goal(text: &str, max_turns: Option<i32>, subgoals: &[&str]) -> SetGoal {
        SetGoal { goal: text.into(), max_turns, subgoals: subgoals.iter().map(|s| (*s).into()).collect() }
    }

    #[test]
    fn a_goal_needs_text_and_a_budget_within_the_installations() {
        assert_eq!(goal("ship it", None, &[]).budget(20), Ok(20), "the installation's budget by default");
        assert_eq!(goal("ship it", Some(5), &["tests pass"]).budget(20), Ok(5));
        for (bad, param) in [
            (goal("  ", None, &[]), "goal"),
            (goal("x", Some(21), &[]), "max_turns"),
            (goal("x", Some(0), &[]), "max_turns"),
            (goal("x", None, &[""]), "subgoals"),
            (goal(&"x".repeat(4_001), None, &[]), "goal"),
        ] {
            assert_eq!(bad.budget(20).map_err(|(p, _)| p), Err(param));
        }
    }
}
