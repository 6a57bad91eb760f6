//! The audit log: one append-only row per admin write. Entries are written in the transaction
//! of the change they describe, so a change without its entry cannot commit; neither database
//! role may update or delete one (migration 0045), and only `hermes_prune_audit` removes the
//! oldest, by age. Secrets never reach it: every before/after value is masked on the way in.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgConnection;
use sqlx::postgres::PgArguments;
use sqlx::query::QueryAs;

use hermes_core::TenantId;

use crate::{Result, views::Admin};

/// What kind of actor made a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActorKind {
    /// A person signed in to the console (or using the API with the console's session).
    Person,
    /// An admin API token.
    Token,
    /// The operator's `hermesctl` with direct database access.
    Cli,
    /// A chat admin command.
    Chat,
    /// A tenant's API key (`/v1/channels`).
    ApiKey,
    /// The service itself.
    System,
}

impl ActorKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            ActorKind::Person => "person",
            ActorKind::Token => "token",
            ActorKind::Cli => "cli",
            ActorKind::Chat => "chat",
            ActorKind::ApiKey => "api_key",
            ActorKind::System => "system",
        }
    }
}

/// Who made a change: a kind, a stable id (a person's or token's id, a chat user's key) and a
/// label for people to read (an email, a token's name).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Actor {
    pub kind: ActorKind,
    pub id: String,
    pub label: String,
}

/// Who is making changes and from where: what every admin write records with its entry.
#[derive(Debug, Clone)]
pub struct Audit {
    pub actor: Actor,
    pub request_id: Option<String>,
    pub source_address: Option<String>,
}

/// One change: what was done (`member.role_changed`), to what, and the object before and after.
#[derive(Debug, Clone)]
pub struct Change {
    pub action: &'static str,
    pub object_kind: &'static str,
    pub object_id: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

impl Change {
    pub fn new(action: &'static str, object_kind: &'static str, object_id: impl ToString) -> Self {
        Self { action, object_kind, object_id: object_id.to_string(), before: None, after: None }
    }

    pub fn before(mut self, value: impl serde::Serialize) -> Self {
        self.before = serde_json::to_value(value).ok();
        self
    }

    pub fn after(mut self, value: impl serde::Serialize) -> Self {
        self.after = serde_json::to_value(value).ok();
        self
    }
}

/// A recorded entry, as the admin API shows it.
pub use hermes_wire::admin::AuditEntry;

/// Which entries to list: every field narrows; `before_id` is the keyset cursor (the last
/// id of the previous page), newest first.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    /// Entries whose action starts with this (`member.` for every membership change).
    pub action: Option<String>,
    /// Entries by this actor (its id or its label).
    pub actor: Option<String>,
    pub object_id: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    pub before_id: Option<i64>,
    pub limit: u32,
}

/// A page of entries and the cursor of the next (`None`: this was the last page).
#[derive(Debug, Clone, serde::Serialize)]
pub struct AuditPage {
    pub entries: Vec<AuditEntry>,
    pub next: Option<i64>,
}

/// What a masked secret reads as.
pub const MASKED: &str = "[masked]";

/// Field names whose string values are secrets: they are recorded as [`MASKED`].
fn is_secret_field(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["secret", "password", "token", "api_key", "apikey", "private_key", "authorization", "credential", "master_key"]
        .iter()
        .any(|s| name.contains(s))
}

/// `value` with every secret-named string field (at any depth) masked.
pub fn mask_secrets(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) if is_secret_field(&k) && !s.is_empty() => Value::String(MASKED.into()),
                        other => mask_secrets(other),
                    };
                    (k, v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(mask_secrets).collect()),
        other => other,
    }
}

/// Appends one entry on `conn` (inside the change's own transaction).
pub(crate) async fn record(
    conn: &mut PgConnection,
    tenant: Option<TenantId>,
    audit: &Audit,
    change: Change,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO audit_log (tenant_id, actor_kind, actor_id, actor_label, action, object_kind, object_id,
                                before, after, request_id, source_address)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(tenant.map(|t| t.as_uuid()))
    .bind(audit.actor.kind.as_str())
    .bind(&audit.actor.id)
    .bind(&audit.actor.label)
    .bind(change.action)
    .bind(change.object_kind)
    .bind(&change.object_id)
    .bind(change.before.map(mask_secrets))
    .bind(change.after.map(mask_secrets))
    .bind(audit.request_id.as_deref())
    .bind(audit.source_address.as_deref())
    .execute(conn)
    .await?;
    Ok(())
}

const LIST: &str = "SELECT id, tenant_id, at, actor_kind, actor_id, actor_label, action, object_kind, object_id,
            before, after, request_id, source_address
     FROM audit_log
     WHERE tenant_id IS NOT DISTINCT FROM $1
       AND ($2::text IS NULL OR starts_with(action, $2))
       AND ($3::text IS NULL OR actor_id = $3 OR actor_label = $3)
       AND ($4::text IS NULL OR object_id = $4)
       AND ($5::timestamptz IS NULL OR at >= $5)
       AND ($6::timestamptz IS NULL OR at < $6)
       AND ($7::bigint IS NULL OR id < $7)
     ORDER BY id DESC
     LIMIT $8";

fn page(entries: Vec<AuditEntry>, limit: u32) -> AuditPage {
    let full = entries.len() >= limit as usize;
    let next = if full { entries.last().map(|e| e.id) } else { None };
    AuditPage { entries, next }
}

fn bind_filter<'q>(
    query: QueryAs<'q, sqlx::Postgres, AuditEntry, PgArguments>,
    filter: &'q AuditFilter,
) -> QueryAs<'q, sqlx::Postgres, AuditEntry, PgArguments> {
    query
        .bind(filter.action.as_deref())
        .bind(filter.actor.as_deref())
        .bind(filter.object_id.as_deref())
        .bind(filter.since)
        .bind(filter.until)
        .bind(filter.before_id)
        .bind(i64::from(filter.limit.clamp(1, 1000)))
}

impl Admin<'_> {
    /// Records an entry as its own statement, with no change of its own: `hermesctl`'s record
    /// of a local command. A change and its entry go through an [`AuditedTx`](super::AuditedTx).
    pub async fn record_audit(self, tenant: Option<TenantId>, audit: &Audit, change: Change) -> Result<()> {
        match tenant {
            Some(t) => record(&mut *self.as_tenant(t).await?, tenant, audit, change).await,
            None => record(&mut *self.system_pool().acquire().await?, None, audit, change).await,
        }
    }

    /// A page of `tenant`'s entries, newest first.
    pub async fn audit_entries(self, tenant: TenantId, filter: &AuditFilter) -> Result<AuditPage> {
        let query = sqlx::query_as(LIST).bind(Some(tenant.as_uuid()));
        let rows = bind_filter(query, filter).fetch_all(&mut *self.as_tenant(tenant).await?).await?;
        Ok(page(rows, filter.limit.clamp(1, 1000)))
    }

    /// A page of the installation's own entries (tenants created, operators' changes), for
    /// operators.
    pub async fn installation_audit_entries(self, filter: &AuditFilter) -> Result<AuditPage> {
        let query = sqlx::query_as(LIST).bind(None::<uuid::Uuid>);
        let rows = bind_filter(query, filter).fetch_all(self.system_pool()).await?;
        Ok(page(rows, filter.limit.clamp(1, 1000)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_masked_at_any_depth_and_counts_are_not() {
        let masked = mask_secrets(json!({
            "name": "ci", "token": "hat_abc", "bot": {"bot_token": "123:xyz", "webhook_secret": "s"},
            "keys": [{"api_key": "sk-1"}], "prompt_tokens": 12, "password": "", "Authorization": "Bearer x"
        }));
        assert_eq!(
            masked,
            json!({
                "name": "ci", "token": MASKED, "bot": {"bot_token": MASKED, "webhook_secret": MASKED},
                "keys": [{"api_key": MASKED}], "prompt_tokens": 12, "password": "", "Authorization": MASKED
            })
        );
    }
}
