//! `/goal` in a chat, without the agent: `/goal` or `/goal status` shows the chat's goal,
//! `/goal pause` stops the loop (a continuation still waiting is dropped), `/goal resume`
//! starts it again with a fresh budget, `/goal clear` (or `stop`, `done`) drops it. They are
//! safe while the agent works: they change the goal, not the running turn. `/goal TEXT` is a
//! message like any other: the worker sets the goal when it runs it (see `worker/src/goals.rs`).

use serde_json::json;

use hermes_store::Channel;

use crate::Gateway;
use crate::incoming::Incoming;
use crate::ingest::{IngestError, route_for};

/// Whether `text` is one of the `/goal` commands the gateway answers.
pub fn is_goal_command(text: &str) -> bool {
    let mut words = text.split_whitespace();
    words.next() == Some("/goal")
        && matches!(words.next(), None | Some("status" | "pause" | "resume" | "clear" | "stop" | "done"))
        && words.next().is_none()
}

const NO_GOAL: &str = "No goal set. Write /goal and what you want done, and I'll keep at it until it is.";

impl Gateway {
    pub(crate) async fn goal_command(&self, channel: &Channel, msg: &Incoming) -> Result<String, IngestError> {
        let err = |e: hermes_store::StoreError| IngestError::new(e.to_string());
        let tenant = channel.tenant_id;
        let route = route_for(channel, msg);
        let Some((session, _)) = self.store.route_state(tenant, &route).await.map_err(err)? else {
            return Ok(NO_GOAL.into());
        };
        let word = msg.text.split_whitespace().nth(1).unwrap_or("status");
        Ok(match word {
            "pause" => match self.store.set_goal_active(tenant, session, false).await.map_err(err)? {
                Some(_) => "⏸ Goal paused. /goal resume to go on, /goal clear to drop it.".into(),
                None => NO_GOAL.into(),
            },
            "resume" => {
                let Some(goal) = self.store.set_goal_active(tenant, session, true).await.map_err(err)? else {
                    return Ok(NO_GOAL.into());
                };
                // Idle: the next step starts now. Busy: the running turn is judged when it ends.
                let (_, open) = self.store.route_busy_turns(tenant, &route).await.map_err(err)?;
                if open == 0 {
                    let mut next = msg.clone();
                    next.text = hermes_store::goals::continuation(&goal.goal);
                    next.dedupe_key = format!("{}:goal-resume", msg.dedupe_key);
                    next.files.clear();
                    Box::pin(self.take_in(channel, next, &json!({}))).await?;
                }
                format!("▶ Goal resumed (0/{} turns used): {}", goal.max_turns, goal.goal)
            }
            "clear" | "stop" | "done" => match self.store.clear_goal(tenant, session).await.map_err(err)? {
                true => "Goal cleared.".into(),
                false => NO_GOAL.into(),
            },
            _ => match self.store.goal(tenant, session).await.map_err(err)? {
                None => NO_GOAL.into(),
                Some(goal) => {
                    let mut text = format!(
                        "⊙ Goal ({}, {}/{} turns used): {}",
                        goal.state, goal.turns_used, goal.max_turns, goal.goal
                    );
                    if let Some(reason) = goal.last_reason {
                        text.push_str(&format!("\nLast check: {reason}"));
                    }
                    text
                }
            },
        })
    }
}
