//! Tenants: the unit of isolation.

use chrono::{DateTime, Utc};
use sqlx::Row;
use uuid::Uuid;

use hermes_core::TenantId;

use crate::{Result, Store, StoreError};

/// A tenant (a team using the service).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Tenant {
    pub id: TenantId,
    pub name: String,
    pub created_at: DateTime<Utc>,
}

impl Store {
    /// Creates a tenant. Operator-only: the admin CLI and admin API call it.
    pub async fn create_tenant(&self, name: &str) -> Result<Tenant> {
        let id = TenantId::mint();
        let row = sqlx::query("INSERT INTO tenants (id, name) VALUES ($1, $2) RETURNING created_at")
            .bind(id.as_uuid())
            .bind(name)
            .fetch_one(self.pool())
            .await
            .map_err(|e| match &e {
                sqlx::Error::Database(db) if db.is_check_violation() => StoreError::Invalid(format!(
                    "tenant name {name:?} must be 1-63 lowercase letters, digits, '-' or '_'"
                )),
                _ => StoreError::conflict_on_unique(e, &format!("tenant {name:?}")),
            })?;
        Ok(Tenant { id, name: name.to_owned(), created_at: row.try_get("created_at")? })
    }

    /// Finds a tenant by name. Operator-only: naming a tenant on the admin CLI is how an
    /// operator authenticates as acting for it.
    pub async fn tenant_by_name(&self, name: &str) -> Result<Tenant> {
        let row = sqlx::query("SELECT id, name, created_at FROM tenants WHERE name = $1")
            .bind(name)
            .fetch_optional(self.pool())
            .await?
            .ok_or(StoreError::NotFound)?;
        let id: Uuid = row.try_get("id")?;
        Ok(Tenant {
            #[expect(clippy::disallowed_methods, reason = "operator names the tenant on the admin CLI")]
            id: TenantId::from_authenticated(id),
            name: row.try_get("name")?,
            created_at: row.try_get("created_at")?,
        })
    }
}
