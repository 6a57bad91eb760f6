//! Finding sessions across a whole tenant, for the people who run it (the admin plane): by
//! agent, by where they came from, and by what was said in them. `session_search` (in
//! [`crate::search`]) is the agent's own tool and stays scoped to one end user; this is not.

use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use hermes_core::{AgentId, SessionSource, TenantId};

use crate::session_admin::{SessionInfo, info_select};
use crate::{Result, views::Conversations};

/// What narrows the list (every field optional).
#[derive(Debug, Clone, Default)]
pub struct SessionFilter {
    pub agent: Option<AgentId>,
    pub source: Option<SessionSource>,
    /// Only sessions with a user or assistant message matching this `tsquery` (from
    /// [`crate::search_text::parse_query`]), best match first.
    pub tsquery: Option<String>,
}

/// A session as the admin plane lists it: with its best matching message when searching.
#[derive(Debug, Clone, Serialize)]
pub struct ListedSession {
    #[serde(flatten)]
    pub info: SessionInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub match_seq: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
}

/// A session's best matching message.
#[derive(sqlx::FromRow)]
struct Hit {
    session_id: Uuid,
    seq: i32,
    content: Option<Value>,
}

const SNIPPET_CHARS: usize = 200;
/// Matching messages ranked before grouping them by session: a query that matches half the
/// tenant's messages still costs one bounded sort.
const MAX_MATCHES: i64 = 5_000;

impl Conversations<'_> {
    /// The tenant's sessions (no delegated sub-agent's) that pass `filter`: most recently active
    /// first, or best match first when searching; `limit` of them after `offset`.
    pub async fn find_sessions(
        self,
        tenant: TenantId,
        filter: &SessionFilter,
        limit: i64,
        offset: i64,
    ) -> Result<Vec<ListedSession>> {
        let Some(tsquery) = filter.tsquery.as_deref() else {
            let rows = sqlx::query(concat!(
                info_select!(),
                " WHERE s.tenant_id = $1 AND ($2::uuid IS NULL OR s.agent_id = $2) AND ($3::text IS NULL OR s.source = $3)
                  AND s.lineage IS DISTINCT FROM 'subagent'
                  ORDER BY s.updated_at DESC, s.id LIMIT $4 OFFSET $5"
            ))
            .bind(tenant.as_uuid())
            .bind(filter.agent.map(|a| a.as_uuid()))
            .bind(filter.source.map(|s| s.as_str()))
            .bind(limit)
            .bind(offset)
            .fetch_all(&mut *self.as_tenant(tenant).await?)
            .await?;
            return rows
                .iter()
                .map(|r| Ok(ListedSession { info: crate::rows::read(r)?, match_seq: None, snippet: None }))
                .collect();
        };
        let mut conn = self.as_tenant(tenant).await?;
        // The tenant's matches through the GIN index (see `hermes_message_matches`, migration
        // 0040), the best one of each session, then the session filters.
        let hits = sqlx::query_as::<_, Hit>(
            "WITH matched AS MATERIALIZED (
                SELECT * FROM hermes_message_matches($2::tsquery, ARRAY['user', 'assistant'])
                ORDER BY rank DESC, created_at DESC LIMIT $3
             ), best AS (
                SELECT DISTINCT ON (session_id) session_id, seq, content, rank FROM matched
                ORDER BY session_id, rank DESC, seq DESC
             )
             SELECT best.session_id, best.seq, best.content FROM best
             JOIN sessions s ON s.tenant_id = $1 AND s.id = best.session_id
             WHERE ($4::uuid IS NULL OR s.agent_id = $4) AND ($5::text IS NULL OR s.source = $5)
               AND s.lineage IS DISTINCT FROM 'subagent'
             ORDER BY best.rank DESC, s.updated_at DESC, s.id LIMIT $6 OFFSET $7",
        )
        // A fresh plan per query: a generic plan cannot judge the tsquery (as in `search.rs`).
        .persistent(false)
        .bind(tenant.as_uuid())
        .bind(tsquery)
        .bind(MAX_MATCHES)
        .bind(filter.agent.map(|a| a.as_uuid()))
        .bind(filter.source.map(|s| s.as_str()))
        .bind(limit)
        .bind(offset)
        .fetch_all(&mut *conn)
        .await
        .map_err(crate::search::bad_query)?;
        let ids: Vec<Uuid> = hits.iter().map(|h| h.session_id).collect();
        let infos = sqlx::query(concat!(info_select!(), " WHERE s.tenant_id = $1 AND s.id = ANY($2)"))
            .bind(tenant.as_uuid())
            .bind(&ids)
            .fetch_all(&mut *conn)
            .await?;
        let mut infos: Vec<SessionInfo> = infos.iter().map(crate::rows::read).collect::<Result<_>>()?;
        let mut out = Vec::with_capacity(hits.len());
        for hit in hits {
            let Some(at) = infos.iter().position(|i| i.id.as_uuid() == hit.session_id) else { continue };
            let text = crate::search::text_of(hit.content);
            out.push(ListedSession {
                info: infos.swap_remove(at),
                match_seq: Some(hit.seq),
                snippet: Some(crate::search_text::snippet(&text, tsquery, SNIPPET_CHARS)),
            });
        }
        Ok(out)
    }
}
