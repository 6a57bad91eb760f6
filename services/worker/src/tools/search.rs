//! `session_search`: the agent recalls earlier conversations with the same user from
//! Postgres, without a model call. Three shapes, chosen by the arguments as upstream does:
//! `query` finds conversations (full-text, any language; see `store/search_text.rs`),
//! `session_id` with `around_message_id` scrolls through one, and no arguments lists recent
//! ones. The current conversation is never returned.

use hermes_core::ToolsetName;
use serde_json::{Value, json};

use hermes_core::SessionId;
use hermes_store::{SearchOrder, SearchScope, Store, StoreError};
use hermes_tools::{SimpleTool, ToolCtx, ToolError, ToolSpec, object_schema};

const DEFAULT_LIMIT: u64 = 3;
const MAX_LIMIT: u64 = 10;
const DEFAULT_WINDOW: i64 = 5;
const MAX_WINDOW: i64 = 20;
const ROLES: [&str; 2] = ["user", "assistant"];

pub(crate) struct SessionSearchTool {
    pub store: Store,
    /// Only this end user's conversations are searched.
    pub user_key: String,
}

fn number(args: &Value, key: &str) -> Result<Option<i64>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            .map(Some)
            .ok_or_else(|| ToolError::RespondToModel(format!("`{key}` must be a whole number"))),
    }
}

fn roles(args: &Value) -> Result<Vec<String>, ToolError> {
    let Some(filter) = args.get("role_filter").and_then(Value::as_str).filter(|s| !s.trim().is_empty()) else {
        return Ok(ROLES.iter().map(|r| (*r).to_owned()).collect());
    };
    let roles: Vec<String> = filter.split(',').map(|r| r.trim().to_lowercase()).filter(|r| !r.is_empty()).collect();
    match roles.iter().find(|r| !ROLES.contains(&r.as_str())) {
        Some(bad) => Err(ToolError::RespondToModel(format!("role_filter {bad:?}: use user, assistant or both"))),
        None => Ok(roles),
    }
}

fn store_error(e: StoreError) -> ToolError {
    match e {
        StoreError::NotFound => ToolError::RespondToModel("no such session among your earlier conversations".into()),
        StoreError::Invalid(why) => ToolError::RespondToModel(why),
        other => ToolError::Unavailable(format!("session search is unavailable right now: {other}")),
    }
}

impl SimpleTool for SessionSearchTool {
    const SPEC: ToolSpec = ToolSpec::new(
        "session_search",
        ToolsetName::SessionSearch,
        "Search your earlier conversations with this user. With `query`: full-text search (any \
                language); words are ANDed, \"quoted phrases\", `a OR b`, `-word` or `NOT word` to exclude, `word*` \
                for a prefix. Each result is a conversation with a snippet, its first and last messages and a \
                window around the match (the matching message has anchor: true). With `session_id` and \
                `around_message_id`: read more of one conversation. With neither: list recent conversations.",
    )
    .read_only()
    .sequential();

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "query": { "type": "string", "description": "What to look for." },
                "session_id": { "type": "string", "description": "A conversation from an earlier result, to scroll." },
                "around_message_id": { "type": "integer", "description": "The message to centre on when scrolling." },
                "window": { "type": "integer", "description": "Messages either side when scrolling (1-20, default 5)." },
                "limit": { "type": "integer", "description": "Conversations to return (1-10, default 3)." },
                "offset": { "type": "integer", "description": "Conversations to skip, for the next page." },
                "sort": { "type": "string", "enum": ["relevance", "newest", "oldest"] },
                "role_filter": { "type": "string", "description": "Comma-separated: user, assistant (default both)." }
            }),
            &[],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let scope = SearchScope {
            tenant: ctx.tenant_id,
            agent: ctx.agent_id,
            user_key: self.user_key.clone(),
            current: Some(ctx.session_id),
        };
        let roles = roles(&args)?;
        let limit = number(&args, "limit")?.map_or(DEFAULT_LIMIT, |n| n.clamp(1, MAX_LIMIT as i64) as u64);
        let offset = number(&args, "offset")?.map_or(0, |n| n.max(0) as u64);
        let (limit, offset) = (limit as usize, offset as usize);
        let query = args.get("query").and_then(Value::as_str).map(str::trim).filter(|q| !q.is_empty());
        let session = args.get("session_id").and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
        let answer = match (query, session) {
            (_, Some(session)) => {
                let session: SessionId = session.parse().map_err(|_| {
                    ToolError::RespondToModel("`session_id` is not a session id from an earlier result".into())
                })?;
                let around = number(&args, "around_message_id")?.ok_or_else(|| {
                    ToolError::RespondToModel("scrolling needs `around_message_id` with `session_id`".into())
                })?;
                let around = i32::try_from(around).unwrap_or(i32::MAX);
                let window = number(&args, "window")?.unwrap_or(DEFAULT_WINDOW).clamp(1, MAX_WINDOW) as i32;
                let (summary, messages) = self
                    .store
                    .conversations()
                    .scroll_session(&scope, session, around, window, &roles)
                    .await
                    .map_err(store_error)?;
                json!({ "mode": "scroll", "session": summary, "messages": messages })
            }
            (Some(query), None) => {
                let Some(tsquery) = hermes_store::search_text::parse_query(query) else {
                    return Err(ToolError::RespondToModel(
                        "the query has no words to look for (only operators or exclusions)".into(),
                    ));
                };
                let order = match args.get("sort").and_then(Value::as_str) {
                    Some("newest") => SearchOrder::Newest,
                    Some("oldest") => SearchOrder::Oldest,
                    _ => SearchOrder::Relevance,
                };
                let results = self
                    .store
                    .conversations()
                    .search_sessions(&scope, &tsquery, &roles, order, limit, offset)
                    .await
                    .map_err(store_error)?;
                let mut answer = json!({ "mode": "discover", "query": query, "count": results.len() });
                if results.len() == limit {
                    answer["next_offset"] = json!(offset + limit);
                }
                answer["results"] = json!(results);
                if results.is_empty() {
                    answer["message"] = json!("No earlier conversation matches; try other words or a prefix (word*).");
                }
                answer
            }
            (None, None) => {
                let sessions =
                    self.store.conversations().recent_sessions(&scope, limit, offset).await.map_err(store_error)?;
                let mut answer = json!({ "mode": "browse", "count": sessions.len() });
                if sessions.len() == limit {
                    answer["next_offset"] = json!(offset + limit);
                }
                answer["sessions"] = json!(sessions);
                answer
            }
        };
        Ok(answer.to_string())
    }
}
