//! Tenants: the unit of isolation.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use hermes_core::TenantId;

use crate::admin::{AuditedTx, Installation};
use crate::{Result, StoreError, views::Tenancy};

/// A tenant (a team using the service), as the admin API shows it.
pub use hermes_wire::admin::Tenant;

/// A tenant read by id, with its limits.
#[derive(sqlx::FromRow)]
struct TenantLimits {
    name: String,
    created_at: DateTime<Utc>,
    requests_per_minute: Option<i32>,
    concurrent_turns: Option<i32>,
}

impl Tenancy<'_> {
    /// Creates a tenant. Operator-only: the admin CLI and admin API call it.
    pub async fn create_tenant(self, name: &str) -> Result<Tenant> {
        create_tenant_on(&mut *self.system_pool().acquire().await?, name).await
    }

    /// Finds a tenant by name. Operator-only: naming a tenant on the admin CLI is how an
    /// operator authenticates as acting for it.
    pub async fn tenant_by_name(self, name: &str) -> Result<Tenant> {
        // The tenant's id is read as a stored row's own (`hermes_wire::rows`): the operator
        // naming it on the admin CLI is how they authenticate as acting for it.
        sqlx::query_as::<_, Tenant>("SELECT id, name, created_at FROM tenants WHERE name = $1")
            .bind(name)
            .fetch_optional(self.system_pool())
            .await?
            .ok_or(StoreError::NotFound)
    }
}

impl AuditedTx<Installation> {
    /// [`Tenancy::create_tenant`](crate::views::Tenancy::create_tenant) in an audited change.
    pub async fn create_tenant(&mut self, name: &str) -> Result<Tenant> {
        create_tenant_on(self.conn(), name).await
    }
}

/// [`Tenancy::create_tenant`](crate::views::Tenancy::create_tenant) on a connection of the system role.
async fn create_tenant_on(conn: &mut PgConnection, name: &str) -> Result<Tenant> {
    let id = TenantId::mint();
    let created_at: DateTime<Utc> =
        sqlx::query_scalar("INSERT INTO tenants (id, name) VALUES ($1, $2) RETURNING created_at")
            .bind(id.as_uuid())
            .bind(name)
            .fetch_one(conn)
            .await
            .map_err(|e| match &e {
                sqlx::Error::Database(db) if db.is_check_violation() => StoreError::Invalid(format!(
                    "tenant name {name:?} must be 1-63 lowercase letters, digits, '-' or '_'"
                )),
                _ => StoreError::conflict_on_unique(e, &format!("tenant {name:?}")),
            })?;
    Ok(Tenant { id, name: name.to_owned(), created_at })
}

impl Tenancy<'_> {
    /// A tenant by id, with its limits (`None`: the installation's default).
    pub async fn tenant(self, tenant: TenantId) -> Result<(Tenant, Option<i32>, Option<i32>)> {
        let row = sqlx::query_as::<_, TenantLimits>(
            "SELECT name, created_at, requests_per_minute, concurrent_turns FROM tenants WHERE id = $1",
        )
        .bind(tenant.as_uuid())
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?
        .ok_or(StoreError::NotFound)?;
        let found = Tenant { id: tenant, name: row.name, created_at: row.created_at };
        Ok((found, row.requests_per_minute, row.concurrent_turns))
    }
}

/// Every table that holds tenants' rows, each under the row policies of migration 0040; with
/// how to count one tenant's rows there without naming the tenant (bundled skills are
/// everyone's, so they are not counted).
const TENANT_ROWS: &str = "
    SELECT 'admin_tokens' AS t, count(*) FROM admin_tokens UNION ALL
    SELECT 'agents', count(*) FROM agents UNION ALL
    SELECT 'api_keys', count(*) FROM api_keys UNION ALL
    SELECT 'audit_log', count(*) FROM audit_log UNION ALL
    SELECT 'approval_grants', count(*) FROM approval_grants UNION ALL
    SELECT 'budgets', count(*) FROM budgets UNION ALL
    SELECT 'channels', count(*) FROM channels UNION ALL
    SELECT 'chat_streams', count(*) FROM chat_streams UNION ALL
    SELECT 'chat_voice_modes', count(*) FROM chat_voice_modes UNION ALL
    SELECT 'workspace_files', count(*) FROM workspace_files UNION ALL
    SELECT 'cron_fires', count(*) FROM cron_fires UNION ALL
    SELECT 'cron_jobs', count(*) FROM cron_jobs UNION ALL
    SELECT 'cron_runs', count(*) FROM cron_runs UNION ALL
    SELECT 'delegation_tasks', count(*) FROM delegation_tasks UNION ALL
    SELECT 'delegations', count(*) FROM delegations UNION ALL
    SELECT 'event_deliveries', count(*) FROM event_deliveries UNION ALL
    SELECT 'event_hooks', count(*) FROM event_hooks UNION ALL
    SELECT 'idempotency_keys', count(*) FROM idempotency_keys UNION ALL
    SELECT 'inbound', count(*) FROM inbound UNION ALL
    SELECT 'interactions', count(*) FROM interactions UNION ALL
    SELECT 'invitations', count(*) FROM invitations UNION ALL
    SELECT 'memberships', count(*) FROM memberships UNION ALL
    SELECT 'memories', count(*) FROM memories UNION ALL
    SELECT 'messages', count(*) FROM messages UNION ALL
    SELECT 'model_calls', count(*) FROM model_calls UNION ALL
    SELECT 'outbox', count(*) FROM outbox UNION ALL
    SELECT 'mcp_servers', count(*) FROM mcp_servers UNION ALL
    SELECT 'secret_bindings', count(*) FROM secret_bindings UNION ALL
    SELECT 'pairing_requests', count(*) FROM pairing_requests UNION ALL
    SELECT 'process_watches', count(*) FROM process_watches UNION ALL
    SELECT 'people', count(*) FROM people UNION ALL
    SELECT 'provider_credentials', count(*) FROM provider_credentials UNION ALL
    SELECT 'provider_pools', count(*) FROM provider_pools UNION ALL
    SELECT 'response_conversations', count(*) FROM response_conversations UNION ALL
    SELECT 'responses', count(*) FROM responses UNION ALL
    SELECT 'session_goals', count(*) FROM session_goals UNION ALL
    SELECT 'session_routes', count(*) FROM session_routes UNION ALL
    SELECT 'session_todos', count(*) FROM session_todos UNION ALL
    SELECT 'sessions', count(*) FROM sessions UNION ALL
    SELECT 'skill_events', count(*) FROM skill_events UNION ALL
    SELECT 'skill_files', count(*) FROM skill_files f
        WHERE EXISTS (SELECT 1 FROM skills s WHERE s.id = f.skill_id AND s.tenant_id IS NOT NULL) UNION ALL
    SELECT 'skill_usage', count(*) FROM skill_usage UNION ALL
    SELECT 'skill_versions', count(*) FROM skill_versions WHERE scope <> '00000000-0000-0000-0000-000000000000' UNION ALL
    SELECT 'skills', count(*) FROM skills WHERE tenant_id IS NOT NULL UNION ALL
    SELECT 'spend_reservations', count(*) FROM spend_reservations UNION ALL
    SELECT 'sso_domains', count(*) FROM sso_domains UNION ALL
    SELECT 'tenant_identity_providers', count(*) FROM tenant_identity_providers UNION ALL
    SELECT 'tenants', count(*) FROM tenants UNION ALL
    SELECT 'turn_files', count(*) FROM turn_files UNION ALL
    SELECT 'turns', count(*) FROM turns UNION ALL
    SELECT 'usage_daily', count(*) FROM usage_daily UNION ALL
    SELECT 'webhook_deliveries', count(*) FROM webhook_deliveries UNION ALL
    SELECT 'webhooks', count(*) FROM webhooks
    ORDER BY 1";

impl Tenancy<'_> {
    /// How many rows `tenant` holds, table by table (what deleting it would remove). The
    /// query names no tenant: it leans on the row policies alone, on purpose, and the contract
    /// test `second_wall` holds it to the owner's `WHERE tenant_id` count for each table.
    pub async fn tenant_rows(self, tenant: TenantId) -> Result<Vec<(String, i64)>> {
        Ok(sqlx::query_as(TENANT_ROWS).fetch_all(&mut *self.as_tenant(tenant).await?).await?)
    }
}
