//! Finding earlier conversations for `session_search`: discovery by full-text query, scrolling
//! around a message, and browsing recent sessions. Every query is scoped to one tenant, agent
//! and end user (`sessions.user_key`), so a team bot's users never find each other's
//! conversations. Compacted continuations count as one conversation (their lineage root);
//! delegated children's sessions are internal and never returned.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use hermes_core::{AgentId, Content, SessionId, TenantId};

use crate::{Result, StoreError, views::Conversations};

/// Whose conversations are searched.
#[derive(Debug, Clone)]
pub struct SearchScope {
    pub tenant: TenantId,
    pub agent: AgentId,
    pub user_key: String,
    /// The conversation the search is made from: it and its compacted ancestors are left out.
    pub current: Option<SessionId>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchOrder {
    Relevance,
    Newest,
    Oldest,
}

/// A session as listed.
#[derive(Debug, Clone, Serialize)]
pub struct SessionSummary {
    pub session_id: SessionId,
    /// The session's title, or the start of its first user message.
    pub title: String,
    pub source: hermes_core::SessionSource,
    pub started_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// One message, shortened for a listing.
#[derive(Debug, Clone, Serialize)]
pub struct FoundMessage {
    pub message_id: i32,
    pub role: String,
    pub text: String,
    pub at: DateTime<Utc>,
    /// The message the query matched.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub anchor: bool,
}

/// A conversation the query matched, with the best match in context.
#[derive(Debug, Clone, Serialize)]
pub struct FoundSession {
    #[serde(flatten)]
    pub session: SessionSummary,
    pub match_message_id: i32,
    pub snippet: String,
    pub bookend_start: Vec<FoundMessage>,
    pub window: Vec<FoundMessage>,
    pub bookend_end: Vec<FoundMessage>,
}

/// Characters of a message's text shown in results.
const MESSAGE_CHARS: usize = 600;
const TITLE_CHARS: usize = 80;
const SNIPPET_CHARS: usize = 200;
/// Matching messages considered before grouping them into conversations.
const MAX_HITS: i64 = 200;
const BOOKEND: i64 = 3;

pub(crate) fn text_of(content: Option<Value>) -> String {
    content.and_then(|c| serde_json::from_value::<Content>(c).ok()).map(|c| c.text()).unwrap_or_default()
}

fn shorten(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        return text.to_owned();
    }
    format!("{}…", text.chars().take(max).collect::<String>())
}

/// A message as listed: `seq, role, content, created_at`.
#[derive(sqlx::FromRow)]
struct MessageRow {
    seq: i32,
    role: String,
    content: Option<Value>,
    created_at: DateTime<Utc>,
}

impl MessageRow {
    /// The message shortened, marked when it is `anchor`.
    fn found(self, anchor: Option<i32>) -> FoundMessage {
        FoundMessage {
            message_id: self.seq,
            role: self.role,
            text: shorten(&text_of(self.content), MESSAGE_CHARS),
            at: self.created_at,
            anchor: anchor == Some(self.seq),
        }
    }
}

/// A message of [`Conversations::in_context`](crate::views::Conversations::in_context), with the part of the listing it belongs to.
#[derive(sqlx::FromRow)]
struct PartRow {
    part: String,
    #[sqlx(flatten)]
    message: MessageRow,
}

/// A matching message of [`Conversations::search_sessions`](crate::views::Conversations::search_sessions), with the root of its conversation.
#[derive(sqlx::FromRow)]
struct HitRow {
    root: Uuid,
    session_id: Uuid,
    seq: i32,
    content: Option<Value>,
    updated_at: DateTime<Utc>,
}

/// A session summary's row ([`summary_columns!`]).
#[derive(sqlx::FromRow)]
struct SummaryRow {
    #[sqlx(try_from = "uuid::Uuid")]
    id: SessionId,
    title: Option<String>,
    source: String,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    first_user: Option<Value>,
}

impl TryFrom<SummaryRow> for SessionSummary {
    type Error = StoreError;

    fn try_from(row: SummaryRow) -> Result<Self> {
        let first = row.first_user;
        let title = row.title.filter(|t| !t.trim().is_empty()).unwrap_or_else(|| shorten(&text_of(first), TITLE_CHARS));
        Ok(SessionSummary {
            session_id: row.id,
            title,
            source: crate::rows::vocab(&row.source)?,
            started_at: row.created_at,
            updated_at: row.updated_at,
        })
    }
}

/// Columns of a session summary from `sessions s` (a macro, so statements stay static strings).
macro_rules! summary_columns {
    () => {
        "s.id, s.title, s.source, s.created_at, s.updated_at,
         (SELECT content FROM messages f WHERE f.tenant_id = s.tenant_id AND f.session_id = s.id AND f.role = 'user'
          ORDER BY f.seq LIMIT 1) AS first_user"
    };
}

impl Conversations<'_> {
    /// `session` and the sessions it continues (compaction parents), newest first.
    pub async fn compaction_ancestors(self, tenant: TenantId, session: SessionId) -> Result<Vec<SessionId>> {
        let ids: Vec<Uuid> = sqlx::query_scalar(
            "WITH RECURSIVE up AS (
                SELECT id, parent_session_id, lineage, 0 AS depth FROM sessions WHERE tenant_id = $1 AND id = $2
                UNION ALL
                SELECT p.id, p.parent_session_id, p.lineage, up.depth + 1
                FROM up JOIN sessions p ON p.tenant_id = $1 AND p.id = up.parent_session_id
                WHERE up.lineage = 'compaction' AND up.depth < 1000
             )
             SELECT id FROM up ORDER BY depth",
        )
        .bind(tenant.as_uuid())
        .bind(session.as_uuid())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(ids.into_iter().map(SessionId::from_uuid).collect())
    }

    async fn excluded(self, scope: &SearchScope) -> Result<Vec<Uuid>> {
        match scope.current {
            Some(current) => {
                Ok(self.compaction_ancestors(scope.tenant, current).await?.iter().map(SessionId::as_uuid).collect())
            }
            None => Ok(Vec::new()),
        }
    }

    /// Conversations matching `tsquery` (from `search_text::parse_query`) in messages of
    /// `roles`, best first (or by date), `limit` of them after skipping `offset`.
    pub async fn search_sessions(
        self,
        scope: &SearchScope,
        tsquery: &str,
        roles: &[String],
        order: SearchOrder,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<FoundSession>> {
        let excluded = self.excluded(scope).await?;
        // The tenant's matches first, in one pass over the (tenant_id, search) GIN index (in
        // `hermes_message_matches`: under a row policy Postgres would not use the index for
        // `@@`, see migration 0040), then the agent and user filters on the sessions: estimates for tsquery selectivity are
        // poor, and a per-session index probe (what the planner otherwise picks) is 80x slower.
        let hits = sqlx::query_as::<_, HitRow>(
            "WITH RECURSIVE matched AS MATERIALIZED (
                SELECT * FROM hermes_message_matches($4::tsquery, $5)
             ), hits AS (
                SELECT matched.session_id, matched.seq, matched.content, matched.rank, s.updated_at
                FROM matched JOIN sessions s ON s.tenant_id = $1 AND s.id = matched.session_id
                WHERE s.agent_id = $2 AND s.user_key = $3 AND s.lineage IS DISTINCT FROM 'subagent'
                  AND s.id <> ALL($6)
                ORDER BY matched.rank DESC, matched.created_at DESC
                LIMIT $7
             ), up AS (
                SELECT h.session_id AS start, s.id, s.parent_session_id, s.lineage, 0 AS depth
                FROM (SELECT DISTINCT session_id FROM hits) h
                JOIN sessions s ON s.tenant_id = $1 AND s.id = h.session_id
                UNION ALL
                SELECT up.start, p.id, p.parent_session_id, p.lineage, up.depth + 1
                FROM up JOIN sessions p ON p.tenant_id = $1 AND p.id = up.parent_session_id
                WHERE up.lineage = 'compaction' AND up.depth < 1000
             ), roots AS (
                SELECT DISTINCT ON (start) start, id AS root FROM up ORDER BY start, depth DESC
             )
             SELECT hits.*, roots.root FROM hits JOIN roots ON roots.start = hits.session_id
             ORDER BY hits.rank DESC, hits.seq DESC",
        )
        // A fresh plan per query: a cached generic plan cannot see the tsquery and picked plans
        // 50x slower in the benchmark.
        .persistent(false)
        .bind(scope.tenant.as_uuid())
        .bind(scope.agent.as_uuid())
        .bind(&scope.user_key)
        .bind(tsquery)
        .bind(roles)
        .bind(&excluded)
        .bind(MAX_HITS)
        .fetch_all(&mut *self.as_tenant(scope.tenant).await?)
        .await
        .map_err(bad_query)?;
        // The best hit of each conversation, in rank order.
        let mut best: Vec<(Uuid, Uuid, i32, String, DateTime<Utc>)> = Vec::new();
        for hit in hits {
            if best.iter().all(|(r, ..)| *r != hit.root) {
                best.push((hit.root, hit.session_id, hit.seq, text_of(hit.content), hit.updated_at));
            }
        }
        match order {
            SearchOrder::Relevance => {}
            SearchOrder::Newest => best.sort_by_key(|b| std::cmp::Reverse(b.4)),
            SearchOrder::Oldest => best.sort_by_key(|b| b.4),
        }
        let mut out = Vec::new();
        for (_, session, seq, text, _) in best.into_iter().skip(offset).take(limit) {
            let snippet = crate::search_text::snippet(&text, tsquery, SNIPPET_CHARS);
            out.push(self.in_context(scope, session, seq, roles, snippet).await?);
        }
        Ok(out)
    }

    /// A matched message with the start and end of its session and five messages either side.
    async fn in_context(
        self,
        scope: &SearchScope,
        session: Uuid,
        seq: i32,
        roles: &[String],
        snippet: String,
    ) -> Result<FoundSession> {
        let mut conn = self.as_tenant(scope.tenant).await?;
        let summary: SessionSummary = sqlx::query_as::<_, SummaryRow>(concat!(
            "SELECT ",
            summary_columns!(),
            " FROM sessions s WHERE s.tenant_id = $1 AND s.id = $2"
        ))
        .bind(scope.tenant.as_uuid())
        .bind(session)
        .fetch_one(&mut *conn)
        .await?
        .try_into()?;
        let rows = sqlx::query_as::<_, PartRow>(
            "(SELECT 'start' AS part, seq, role, content, created_at FROM messages
              WHERE tenant_id = $1 AND session_id = $2 AND role IN ('user', 'assistant') ORDER BY seq LIMIT $5)
             UNION ALL
             (SELECT 'end', seq, role, content, created_at FROM messages
              WHERE tenant_id = $1 AND session_id = $2 AND role IN ('user', 'assistant') ORDER BY seq DESC LIMIT $5)
             UNION ALL
             (SELECT 'window', seq, role, content, created_at FROM messages
              WHERE tenant_id = $1 AND session_id = $2 AND seq BETWEEN $3 - 5 AND $3 + 5 AND role = ANY($4)
              ORDER BY seq)",
        )
        .bind(scope.tenant.as_uuid())
        .bind(session)
        .bind(seq)
        .bind(roles)
        .bind(BOOKEND)
        .fetch_all(&mut *conn)
        .await?;
        let (mut start, mut window, mut end) = (Vec::new(), Vec::new(), Vec::new());
        for row in rows {
            match row.part.as_str() {
                "start" => start.push(row.message.found(None)),
                "end" => end.push(row.message.found(None)),
                _ => window.push(row.message.found(Some(seq))),
            }
        }
        end.reverse();
        // Bookends that the window already shows are left out.
        let shown: Vec<i32> = window.iter().map(|m| m.message_id).collect();
        start.retain(|m| !shown.contains(&m.message_id));
        end.retain(|m| !shown.contains(&m.message_id) && start.iter().all(|s| s.message_id != m.message_id));
        Ok(FoundSession {
            session: summary,
            match_message_id: seq,
            snippet,
            bookend_start: start,
            window,
            bookend_end: end,
        })
    }

    /// Messages of `session` within `window` of `around`, if the session is in `scope`.
    pub async fn scroll_session(
        self,
        scope: &SearchScope,
        session: SessionId,
        around: i32,
        window: i32,
        roles: &[String],
    ) -> Result<(SessionSummary, Vec<FoundMessage>)> {
        let mut conn = self.as_tenant(scope.tenant).await?;
        let row = sqlx::query_as::<_, SummaryRow>(concat!(
            "SELECT ",
            summary_columns!(),
            " FROM sessions s WHERE s.tenant_id = $1 AND s.id = $2 AND s.agent_id = $3 AND s.user_key = $4"
        ))
        .bind(scope.tenant.as_uuid())
        .bind(session.as_uuid())
        .bind(scope.agent.as_uuid())
        .bind(&scope.user_key)
        .fetch_optional(&mut *conn)
        .await?
        .ok_or(StoreError::NotFound)?;
        let rows = sqlx::query_as::<_, MessageRow>(
            "SELECT seq, role, content, created_at FROM messages
             WHERE tenant_id = $1 AND session_id = $2 AND seq BETWEEN $3 - $4 AND $3 + $4 AND role = ANY($5)
             ORDER BY seq",
        )
        .bind(scope.tenant.as_uuid())
        .bind(session.as_uuid())
        .bind(around)
        .bind(window)
        .bind(roles)
        .fetch_all(&mut *conn)
        .await?;
        let messages = rows.into_iter().map(|r| r.found(Some(around))).collect();
        Ok((row.try_into()?, messages))
    }

    /// The scope's conversations, most recently active first (a compacted one once, as its
    /// latest session).
    pub async fn recent_sessions(
        self,
        scope: &SearchScope,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<SessionSummary>> {
        let excluded = self.excluded(scope).await?;
        let rows = sqlx::query_as::<_, SummaryRow>(concat!(
            "SELECT ",
            summary_columns!(),
            " FROM sessions s
             WHERE s.tenant_id = $1 AND s.agent_id = $2 AND s.user_key = $3 AND s.lineage IS DISTINCT FROM 'subagent'
               AND s.id <> ALL($4)
               AND NOT EXISTS (SELECT 1 FROM sessions c WHERE c.tenant_id = s.tenant_id AND c.parent_session_id = s.id
                               AND c.lineage = 'compaction')
               AND EXISTS (SELECT 1 FROM messages m WHERE m.tenant_id = s.tenant_id AND m.session_id = s.id)
             ORDER BY s.updated_at DESC LIMIT $5 OFFSET $6"
        ))
        .bind(scope.tenant.as_uuid())
        .bind(scope.agent.as_uuid())
        .bind(&scope.user_key)
        .bind(&excluded)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .bind(i64::try_from(offset).unwrap_or(i64::MAX))
        .fetch_all(&mut *self.as_tenant(scope.tenant).await?)
        .await?;
        rows.into_iter().map(SessionSummary::try_from).collect()
    }
}

/// A tsquery Postgres could not read is the caller's mistake, not a storage failure.
pub(crate) fn bad_query(e: sqlx::Error) -> StoreError {
    match &e {
        sqlx::Error::Database(db) if db.code().as_deref() == Some("42601") => {
            StoreError::Invalid(format!("unreadable search query: {}", db.message()))
        }
        _ => StoreError::from(e),
    }
}
