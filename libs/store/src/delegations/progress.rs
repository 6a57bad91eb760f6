//! A background child's progress in its parent's chat, as upstream's gateway relays a
//! child's tools: after every few tool calls, one line naming them
//! ("🔀 Background task 1/3: web_search, read_file, …"), where the chat's channel shows tool
//! progress. A child's end is told by [`super::finish_child_in`].

use sqlx::types::Json;

use hermes_core::outbox::Destination;
use hermes_core::{DelegationId, TenantId, TurnId};

use super::enqueue_notice;
use crate::{Result, views::Turns};

/// Tool calls told in one line.
pub const TOOLS_PER_LINE: usize = 5;

/// Which line: the `line`th of those the child's step `step` completed.
#[derive(Debug, Clone, Copy)]
pub struct ProgressAt {
    pub step: i32,
    pub line: usize,
}

#[derive(sqlx::FromRow)]
struct Told {
    #[sqlx(try_from = "crate::rows::Id")]
    delegation_id: DelegationId,
    position: i32,
    tasks: i64,
    reply_to: Option<Json<Destination>>,
    shows_tools: bool,
}

/// The line for a child's tools.
fn progress_line(position: i32, tasks: i64, tools: &[String]) -> String {
    let which = if tasks > 1 { format!(" {position}/{tasks}") } else { String::new() };
    // The model names the tools it calls: only a tool name's characters reach the chat (no
    // links, mentions or markup).
    let name =
        |t: &String| t.chars().filter(|c| c.is_ascii_alphanumeric() || "_.-".contains(*c)).take(64).collect::<String>();
    let names = tools.iter().map(name).collect::<Vec<_>>().join(", ");
    format!("🔀 Background task{which}: {names}")
}

impl Turns<'_> {
    /// Tells the parent's chat tools the background child `turn` called, as the line `at`.
    /// Keyed by it, so a resumed turn that reaches the same step tells nothing twice.
    /// A child of a finished or stopped delegation, or of a chat that hides tool progress,
    /// tells nothing.
    pub async fn child_progress(self, tenant: TenantId, turn: TurnId, at: ProgressAt, tools: &[String]) -> Result<()> {
        let mut tx = self.tenant_tx(tenant).await?;
        let told: Option<Told> = sqlx::query_as(
            "SELECT d.id AS delegation_id, t.position, d.reply_to,
                    (SELECT count(*) FROM delegation_tasks n
                     WHERE n.tenant_id = $1 AND n.delegation_id = d.id) AS tasks,
                    COALESCE((SELECT c.tool_progress FROM channels c
                              WHERE c.tenant_id = $1 AND c.id = (d.reply_to->>'channel_id')::uuid), false)
                        AS shows_tools
             FROM delegation_tasks t JOIN delegations d ON d.tenant_id = t.tenant_id AND d.id = t.delegation_id
             WHERE t.tenant_id = $1 AND t.turn_id = $2 AND t.state = 'running' AND d.state = 'running'",
        )
        .bind(tenant.as_uuid())
        .bind(turn.as_uuid())
        .fetch_optional(&mut *tx)
        .await?;
        let Some(Told { delegation_id, position, tasks, reply_to: Some(Json(dest)), shows_tools: true }) = told else {
            return Ok(());
        };
        let key = format!("delegation:{delegation_id}:{position}:step:{}:{}", at.step, at.line);
        enqueue_notice(&mut tx, tenant, &dest, &key, progress_line(position, tasks, tools)).await?;
        tx.commit().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_names_the_tools_with_tool_name_characters_only() {
        let tools = ["web_search".to_owned(), "[click](https://evil.example) @here".to_owned()];
        assert_eq!(progress_line(2, 3, &tools), "🔀 Background task 2/3: web_search, clickhttpsevil.examplehere");
        assert_eq!(progress_line(1, 1, &tools[..1]), "🔀 Background task: web_search");
    }
}
