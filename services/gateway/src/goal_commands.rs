//! `/goal` in a chat, without the agent: `/goal` or `/goal status` shows the chat's goal,
//! `/goal pause` stops the loop (a continuation still waiting is dropped), `/goal resume`
//! starts it again with a fresh budget, `/goal clear` (or `stop`, `done`) drops it. They are
//! safe while the agent works: they change the goal, not the running turn. `/goal TEXT` is a
//! message like any other: the worker sets the goal when it runs it (see `worker/src/goals.rs`).
//! `/subgoal TEXT` adds a criterion the goal must also meet, `/subgoal` lists them,
//! `/subgoal remove N` and `/subgoal clear` take them back (a new goal starts with none).

use serde_json::json;

use hermes_core::SessionId;
use hermes_store::{Channel, Route};

use crate::Gateway;
use crate::error::IngestError;
use crate::incoming::Incoming;
use crate::route::route_for;

/// What `/goal` followed by a control word does (anything else after `/goal` is a goal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GoalControl {
    Status,
    Pause,
    Resume,
    Clear,
}

/// The control `rest` (the text after `/goal`) names, if it is one.
fn goal_control(rest: &str) -> Option<GoalControl> {
    Some(match rest.trim() {
        "" | "status" => GoalControl::Status,
        "pause" => GoalControl::Pause,
        "resume" => GoalControl::Resume,
        "clear" | "stop" | "done" => GoalControl::Clear,
        _ => return None,
    })
}

/// Whether `rest`, the text after `/goal`, makes it one of the gateway's `/goal` commands.
pub fn is_goal_control(rest: &str) -> bool {
    goal_control(rest).is_some()
}

const NO_GOAL: &str = "No goal set. Write /goal and what you want done, and I'll keep at it until it is.";

impl Gateway {
    pub(crate) async fn goal_command(&self, channel: &Channel, msg: &Incoming) -> Result<String, IngestError> {
        let err = |e: hermes_store::StoreError| IngestError::new(e.to_string());
        let (tenant, route) = (channel.tenant_id, route_for(channel, msg));
        let Some(session) = self.conversation(channel, &route).await? else { return Ok(NO_GOAL.into()) };
        let rest = hermes_core::commands::parse(&msg.text).map_or("", |(_, rest)| rest);
        Ok(match goal_control(rest).unwrap_or(GoalControl::Status) {
            GoalControl::Pause => {
                match self.store.conversations().set_goal_active(tenant, session, false).await.map_err(err)? {
                    Some(_) => "⏸ Goal paused. /goal resume to go on, /goal clear to drop it.".into(),
                    None => NO_GOAL.into(),
                }
            }
            GoalControl::Resume => {
                let Some(goal) =
                    self.store.conversations().set_goal_active(tenant, session, true).await.map_err(err)?
                else {
                    return Ok(NO_GOAL.into());
                };
                // Idle: the next step starts now. Busy: the running turn is judged when it ends.
                let (_, open) = self.store.chat().route_busy_turns(tenant, &route).await.map_err(err)?;
                if open == 0 {
                    let mut next = msg.clone();
                    next.text = hermes_store::goals::continuation(&goal.goal, &goal.subgoals);
                    next.dedupe_key = format!("{}:goal-resume", msg.dedupe_key);
                    next.files.clear();
                    Box::pin(self.take_in(channel, next, &json!({}))).await?;
                }
                format!("▶ Goal resumed (0/{} turns used): {}", goal.max_turns, goal.goal)
            }
            GoalControl::Clear => match self.store.conversations().clear_goal(tenant, session).await.map_err(err)? {
                true => "Goal cleared.".into(),
                false => NO_GOAL.into(),
            },
            GoalControl::Status => match self.store.conversations().goal(tenant, session).await.map_err(err)? {
                None => NO_GOAL.into(),
                Some(goal) => {
                    let mut text = format!(
                        "⊙ Goal ({}, {}/{} turns used): {}",
                        goal.state, goal.turns_used, goal.max_turns, goal.goal
                    );
                    text.push_str(&numbered(&goal.subgoals));
                    if let Some(reason) = goal.last_reason {
                        text.push_str(&format!("\nLast check: {reason}"));
                    }
                    text
                }
            },
        })
    }
}

impl Gateway {
    /// The session `route` leads to in `channel`'s tenant, if it has one yet (a goal needs one).
    async fn conversation(&self, channel: &Channel, route: &Route) -> Result<Option<SessionId>, IngestError> {
        let state = self.store.conversations().route_state(channel.tenant_id, route).await;
        Ok(state.map_err(|e| IngestError::new(e.to_string()))?.map(|(session, _)| session))
    }
}

/// The criteria, numbered, on lines of their own (nothing when there are none).
fn numbered(subgoals: &[String]) -> String {
    subgoals.iter().enumerate().map(|(i, s)| format!("\n  {}. {s}", i + 1)).collect()
}

const NO_GOAL_FOR_SUBGOAL: &str = "Set a goal first: /goal and what you want done.";

impl Gateway {
    /// `/subgoal [TEXT | remove N | clear]`.
    pub(crate) async fn subgoal_command(&self, channel: &Channel, msg: &Incoming) -> Result<String, IngestError> {
        let err = |e: hermes_store::StoreError| IngestError::new(e.to_string());
        let tenant = channel.tenant_id;
        let route = route_for(channel, msg);
        let Some(session) = self.conversation(channel, &route).await? else { return Ok(NO_GOAL_FOR_SUBGOAL.into()) };
        let rest = msg.text.trim_start().strip_prefix("/subgoal").unwrap_or_default().trim();
        let mut words = rest.split_whitespace();
        let mut refusal = None;
        let edited = match (words.next(), words.next(), words.next()) {
            (None, _, _) => self
                .store
                .conversations()
                .goal(tenant, session)
                .await
                .map_err(err)?
                .filter(|g| g.state != hermes_core::GoalState::Done),
            (Some("clear"), None, _) => {
                self.store.conversations().edit_subgoals(tenant, session, Vec::clear).await.map_err(err)?
            }
            (Some("remove"), Some(n), None) => {
                let index = n.parse::<usize>().ok().filter(|&n| n > 0);
                let change = |list: &mut Vec<String>| match index {
                    Some(n) if n <= list.len() => {
                        list.remove(n - 1);
                    }
                    _ => refusal = Some(format!("There is no criterion {n}: /subgoal lists them.")),
                };
                self.store.conversations().edit_subgoals(tenant, session, change).await.map_err(err)?
            }
            _ => {
                let criterion: String = rest.chars().take(500).collect();
                self.store
                    .conversations()
                    .edit_subgoals(tenant, session, |list| list.push(criterion))
                    .await
                    .map_err(err)?
            }
        };
        let Some(goal) = edited else { return Ok(NO_GOAL_FOR_SUBGOAL.into()) };
        if let Some(refusal) = refusal {
            return Ok(refusal);
        }
        Ok(if goal.subgoals.is_empty() {
            format!("⊙ Goal: {} (no extra criteria).", goal.goal)
        } else {
            format!("⊙ Goal: {}\nAlso required:{}", goal.goal, numbered(&goal.subgoals))
        })
    }
}
