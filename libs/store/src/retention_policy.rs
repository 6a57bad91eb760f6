//! How long a tenant keeps its data (migration 0074): sessions, finished turns, the files turns
//! were given and usage detail, each in days. `None` is the installation's period
//! (`retention.*`), `Some(0)` keeps forever. The scheduler's sweep applies them
//! (`system::data_retention`).

use hermes_core::TenantId;
use hermes_core::retention::{MAX_DAYS, USAGE_DETAIL_MIN_DAYS};

use crate::{Result, StoreError, views::Tenancy};

/// A tenant's retention periods.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, sqlx::FromRow, serde::Serialize)]
pub struct Retention {
    #[sqlx(try_from = "Days")]
    pub sessions_days: Option<u32>,
    #[sqlx(try_from = "Days")]
    pub turns_days: Option<u32>,
    #[sqlx(try_from = "Days")]
    pub files_days: Option<u32>,
    #[sqlx(try_from = "Days")]
    pub usage_detail_days: Option<u32>,
}

/// A nullable day count as stored.
#[derive(sqlx::Type)]
#[sqlx(transparent)]
struct Days(Option<i32>);

impl TryFrom<Days> for Option<u32> {
    type Error = std::num::TryFromIntError;

    fn try_from(days: Days) -> Result<Self, Self::Error> {
        days.0.map(u32::try_from).transpose()
    }
}

/// A session period as stored: "forever" is [`MAX_DAYS`], since the previous release's
/// scheduler reads 0 as "delete every idle session" (migration 0074).
pub(crate) fn session_days_stored(days: Option<u32>) -> Option<u32> {
    days.map(|d| if d == 0 { MAX_DAYS } else { d })
}

/// A stored session period as the tenant set it.
pub(crate) fn session_days_read(days: Option<u32>) -> Option<u32> {
    days.map(|d| if d >= MAX_DAYS { 0 } else { d })
}

impl Tenancy<'_> {
    /// `tenant`'s retention periods.
    pub async fn retention(self, tenant: TenantId) -> Result<Retention> {
        let stored: Retention = sqlx::query_as(
            "SELECT session_retention_days AS sessions_days, turn_retention_days AS turns_days,
                    file_retention_days AS files_days, usage_detail_retention_days AS usage_detail_days
             FROM tenants WHERE id = $1",
        )
        .bind(tenant.as_uuid())
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?
        .ok_or(StoreError::NotFound)?;
        Ok(Retention { sessions_days: session_days_read(stored.sessions_days), ..stored })
    }

    /// Sets `tenant`'s retention periods. `Invalid` for usage detail under
    /// [`USAGE_DETAIL_MIN_DAYS`] (other than 0) or a period over [`MAX_DAYS`].
    pub async fn set_retention(self, tenant: TenantId, retention: &Retention) -> Result<()> {
        let days = |what: &str, d: Option<u32>| -> Result<Option<i32>> {
            let stored = |d: u32| i32::try_from(d).ok().filter(|_| d <= MAX_DAYS);
            d.map(|d| stored(d).ok_or_else(|| StoreError::Invalid(format!("{what} is over {MAX_DAYS} days"))))
                .transpose()
        };
        let min = USAGE_DETAIL_MIN_DAYS;
        if retention.usage_detail_days.is_some_and(|d| d != 0 && d < min) {
            return Err(StoreError::Invalid(format!("usage detail is kept 0 (forever) or at least {min} days")));
        }
        let done = sqlx::query(
            "UPDATE tenants SET session_retention_days = $2, turn_retention_days = $3, file_retention_days = $4,
                    usage_detail_retention_days = $5
             WHERE id = $1",
        )
        .bind(tenant.as_uuid())
        .bind(days("sessions", session_days_stored(retention.sessions_days))?)
        .bind(days("turns", retention.turns_days)?)
        .bind(days("files", retention.files_days)?)
        .bind(days("usage detail", retention.usage_detail_days)?)
        .execute(&mut *self.as_tenant(tenant).await?)
        .await?;
        crate::require_changed(&done)
    }
}
