//! The files people send, metered per tenant (migration 0062): each workspace's inbox as
//! sandboxd measured it at the last delivery there, and the tenant's quota over their sum.

use sqlx::PgConnection;

use hermes_core::{AgentId, TenantId};

use crate::admin::audited::tenant_writes;

use crate::{Result, views::Tenancy};

/// A tenant's stored files and the quota over them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStorage {
    /// Bytes in the tenant's workspaces' inboxes, as last measured.
    pub used_bytes: i64,
    /// The tenant's own quota in MB (`None`: the installation's default; 0: unlimited).
    pub quota_mb: Option<i32>,
}

impl Tenancy<'_> {
    /// What the tenant's inboxes hold, and its own quota.
    pub async fn file_storage(self, tenant: TenantId) -> Result<FileStorage> {
        let (used_bytes, quota_mb): (i64, Option<i32>) = sqlx::query_as(
            "SELECT COALESCE((SELECT sum(inbox_bytes) FROM workspace_files WHERE tenant_id = $1), 0)::bigint,
                    (SELECT file_storage_mb FROM tenants WHERE id = $1)",
        )
        .bind(tenant.as_uuid())
        .fetch_one(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(FileStorage { used_bytes, quota_mb })
    }

    /// Records what one workspace's inbox holds now.
    pub async fn record_inbox_bytes(self, tenant: TenantId, agent: AgentId, workspace: &str, bytes: u64) -> Result<()> {
        sqlx::query(
            "INSERT INTO workspace_files (tenant_id, agent_id, workspace, inbox_bytes) VALUES ($1, $2, $3, $4)
             ON CONFLICT (tenant_id, agent_id, workspace)
             DO UPDATE SET inbox_bytes = EXCLUDED.inbox_bytes, updated_at = now()",
        )
        .bind(tenant.as_uuid())
        .bind(agent.as_uuid())
        .bind(workspace)
        .bind(i64::try_from(bytes).unwrap_or(i64::MAX))
        .execute(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(())
    }
}

tenant_writes! {
    in Tenancy;
    /// Sets the tenant's own file storage quota (`None`: the installation's default; 0:
    /// unlimited).
    pub async fn set_file_storage_quota(quota_mb: Option<u32>) -> Result<()> = set_file_storage_quota_on;
}

/// [`Tenancy::set_file_storage_quota`](crate::views::Tenancy::set_file_storage_quota) on a connection already set to `tenant`.
async fn set_file_storage_quota_on(conn: &mut PgConnection, tenant: TenantId, quota_mb: Option<u32>) -> Result<()> {
    sqlx::query("UPDATE tenants SET file_storage_mb = $2 WHERE id = $1")
        .bind(tenant.as_uuid())
        .bind(quota_mb.map(|q| i32::try_from(q).unwrap_or(i32::MAX)))
        .execute(conn)
        .await?;
    Ok(())
}
