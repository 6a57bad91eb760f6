//! A tenant's daily web allowance (searches, extracted pages): what the operator set, or
//! `None` for the installation's default. The counting is Redis's (`hermes_cache`).

use sqlx::{PgConnection, Row};

use hermes_core::TenantId;

use crate::admin::audited::tenant_writes;
use crate::{Result, StoreError, views::Tenancy};

/// A tenant's own web quotas (`None`: the installation's default; 0: unlimited).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct WebQuotas {
    pub searches_per_day: Option<u32>,
    pub extracts_per_day: Option<u32>,
}

fn stored(v: Option<u32>) -> Option<i32> {
    v.map(|n| i32::try_from(n).unwrap_or(i32::MAX))
}

impl Tenancy<'_> {
    /// The tenant's web quotas.
    pub async fn web_quotas(self, tenant: TenantId) -> Result<WebQuotas> {
        let row = sqlx::query("SELECT web_searches_per_day, web_extracts_per_day FROM tenants WHERE id = $1")
            .bind(tenant.as_uuid())
            .fetch_optional(&mut *self.as_tenant(tenant).await?)
            .await?
            .ok_or(StoreError::NotFound)?;
        let read = |column: &str| -> Result<Option<u32>> {
            Ok(row.try_get::<Option<i32>, _>(column)?.map(|v| u32::try_from(v).unwrap_or(0)))
        };
        Ok(WebQuotas {
            searches_per_day: read("web_searches_per_day")?,
            extracts_per_day: read("web_extracts_per_day")?,
        })
    }
}

tenant_writes! {
    in Tenancy;
    /// Sets the tenant's web quotas.
    pub async fn set_web_quotas(quotas: WebQuotas) -> Result<()> = set_web_quotas_on;
}

/// [`Tenancy::set_web_quotas`](crate::views::Tenancy::set_web_quotas) on a connection already set to `tenant`.
async fn set_web_quotas_on(conn: &mut PgConnection, tenant: TenantId, quotas: WebQuotas) -> Result<()> {
    sqlx::query("UPDATE tenants SET web_searches_per_day = $2, web_extracts_per_day = $3 WHERE id = $1")
        .bind(tenant.as_uuid())
        .bind(stored(quotas.searches_per_day))
        .bind(stored(quotas.extracts_per_day))
        .execute(conn)
        .await?;
    Ok(())
}
