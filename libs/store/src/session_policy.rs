//! A tenant's session policy (migration 0007): when a chat's session is reset, and how long
//! sessions are kept. The rules are pure functions of the clock, so they are tested with a fake
//! one; the gateway asks them before routing a message (see `routes.rs`).

use chrono::{DateTime, Duration, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;
use sqlx::Row;

use hermes_core::TenantId;

use crate::{Result, StoreError, views::Conversations};

/// What a tenant chose (defaults as upstream: reset after a day idle, or daily at 04:00).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionPolicy {
    pub timezone: Tz,
    /// Reset after this many idle minutes; 0 never.
    pub idle_reset_minutes: u32,
    /// Reset when this local hour has passed since the last activity; `None` never.
    pub daily_reset_hour: Option<u8>,
    /// Delete sessions this many days after their last activity; 0 keeps them, `None` follows
    /// the installation's `retention.sessions_days`.
    pub retention_days: Option<u32>,
}

impl Default for SessionPolicy {
    fn default() -> Self {
        Self { timezone: Tz::UTC, idle_reset_minutes: 1_440, daily_reset_hour: Some(4), retention_days: None }
    }
}

/// Why a chat gets a fresh session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetReason {
    Idle,
    Daily,
}

impl SessionPolicy {
    /// The latest daily reset moment at or before `now`, in UTC.
    fn last_daily_boundary(&self, hour: u8, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let local_now = now.with_timezone(&self.timezone);
        let at = NaiveTime::from_hms_opt(u32::from(hour), 0, 0)?;
        for days_back in 0..=2 {
            let day = local_now.date_naive() - Duration::days(days_back);
            // A local time skipped by a DST jump counts from the first minute that exists.
            let moment = (0..=120).find_map(|m| {
                self.timezone.from_local_datetime(&(day.and_time(at) + Duration::minutes(m))).earliest()
            })?;
            let moment = moment.with_timezone(&Utc);
            if moment <= now {
                return Some(moment);
            }
        }
        None
    }

    /// Whether a chat whose session was last active at `last_activity` starts a new session
    /// at `now`. The caller still keeps the session while a background process of it runs.
    pub fn reset_due(&self, last_activity: DateTime<Utc>, now: DateTime<Utc>) -> Option<ResetReason> {
        if self.idle_reset_minutes > 0 && now - last_activity >= Duration::minutes(i64::from(self.idle_reset_minutes)) {
            return Some(ResetReason::Idle);
        }
        let hour = self.daily_reset_hour?;
        let boundary = self.last_daily_boundary(hour, now)?;
        (last_activity < boundary).then_some(ResetReason::Daily)
    }
}

fn parse_timezone(name: &str) -> Result<Tz> {
    name.parse::<Tz>()
        .map_err(|_| StoreError::Invalid(format!("unknown time zone {name:?}; use an IANA name such as Asia/Shanghai")))
}

impl Conversations<'_> {
    pub async fn session_policy(self, tenant: TenantId) -> Result<SessionPolicy> {
        let row = sqlx::query(
            "SELECT timezone, session_idle_reset_minutes, session_daily_reset_hour, session_retention_days
             FROM tenants WHERE id = $1",
        )
        .bind(tenant.as_uuid())
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?
        .ok_or(StoreError::NotFound)?;
        let corrupt = |what: &str| StoreError::Corrupt(format!("tenant {what} out of range"));
        Ok(SessionPolicy {
            timezone: parse_timezone(&row.try_get::<String, _>("timezone")?)?,
            idle_reset_minutes: u32::try_from(row.try_get::<i32, _>("session_idle_reset_minutes")?)
                .map_err(|_| corrupt("idle minutes"))?,
            daily_reset_hour: row
                .try_get::<Option<i16>, _>("session_daily_reset_hour")?
                .map(|h| u8::try_from(h).map_err(|_| corrupt("reset hour")))
                .transpose()?,
            retention_days: crate::retention_policy::session_days_read(
                row.try_get::<Option<i32>, _>("session_retention_days")?
                    .map(|d| u32::try_from(d).map_err(|_| corrupt("retention days")))
                    .transpose()?,
            ),
        })
    }

    /// Sets the tenant's policy (operator or tenant admin).
    pub async fn set_session_policy(self, tenant: TenantId, policy: &SessionPolicy) -> Result<()> {
        let out_of_range = |what: &str| StoreError::Invalid(format!("{what} is out of range"));
        if policy.daily_reset_hour.is_some_and(|h| h >= 24) {
            return Err(out_of_range("the daily reset hour"));
        }
        let done = sqlx::query(
            "UPDATE tenants SET timezone = $2, session_idle_reset_minutes = $3, session_daily_reset_hour = $4,
                    session_retention_days = $5
             WHERE id = $1",
        )
        .bind(tenant.as_uuid())
        .bind(policy.timezone.name())
        .bind(i32::try_from(policy.idle_reset_minutes).map_err(|_| out_of_range("idle minutes"))?)
        .bind(policy.daily_reset_hour.map(i16::from))
        .bind(
            crate::retention_policy::session_days_stored(policy.retention_days)
                .map(i32::try_from)
                .transpose()
                .map_err(|_| out_of_range("retention days"))?,
        )
        .execute(&mut *self.as_tenant(tenant).await?)
        .await?;
        crate::require_changed(&done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn a_day_idle_resets_and_so_does_passing_four_in_the_morning() {
        let policy = SessionPolicy::default();
        // Active at 23:00, next message at 03:59: neither rule applies yet.
        assert_eq!(policy.reset_due(at("2026-11-29T23:00:00Z"), at("2026-11-30T03:59:00Z")), None);
        // ...at 04:00 the daily boundary has passed.
        assert_eq!(policy.reset_due(at("2026-11-29T23:00:00Z"), at("2026-11-30T04:00:00Z")), Some(ResetReason::Daily));
        // Active at 04:30, next at 09:00 the same day: same session.
        assert_eq!(policy.reset_due(at("2026-11-30T04:30:00Z"), at("2026-11-30T09:00:00Z")), None);
        // 24 hours idle.
        let idle = SessionPolicy { daily_reset_hour: None, ..SessionPolicy::default() };
        assert_eq!(idle.reset_due(at("2026-11-29T09:00:00Z"), at("2026-11-30T08:59:00Z")), None);
        assert_eq!(idle.reset_due(at("2026-11-29T09:00:00Z"), at("2026-11-30T09:00:00Z")), Some(ResetReason::Idle));
    }

    #[test]
    fn the_daily_reset_follows_the_tenants_time_zone() {
        let shanghai =
            SessionPolicy { timezone: Tz::Asia__Shanghai, idle_reset_minutes: 0, ..SessionPolicy::default() };
        // 04:00 in Shanghai is 20:00 UTC the day before.
        assert_eq!(shanghai.reset_due(at("2026-11-29T19:00:00Z"), at("2026-11-29T19:59:00Z")), None);
        assert_eq!(
            shanghai.reset_due(at("2026-11-29T19:00:00Z"), at("2026-11-29T20:00:00Z")),
            Some(ResetReason::Daily)
        );
    }

    #[test]
    fn a_reset_hour_skipped_by_daylight_saving_still_resets() {
        // New York skips 02:00-03:00 on 2026-03-08; a 02:00 reset happens at 03:00 local (07:00 UTC).
        let ny = SessionPolicy {
            timezone: Tz::America__New_York,
            idle_reset_minutes: 0,
            daily_reset_hour: Some(2),
            retention_days: None,
        };
        assert_eq!(ny.reset_due(at("2026-03-08T05:00:00Z"), at("2026-03-08T06:59:00Z")), None);
        assert_eq!(ny.reset_due(at("2026-03-08T05:00:00Z"), at("2026-03-08T07:00:00Z")), Some(ResetReason::Daily));
    }

    #[test]
    fn no_rules_never_reset() {
        let never = SessionPolicy { idle_reset_minutes: 0, daily_reset_hour: None, ..SessionPolicy::default() };
        assert_eq!(never.reset_due(at("2020-01-01T00:00:00Z"), at("2026-11-30T00:00:00Z")), None);
    }
}
