//! Console sessions and one-time sign-in links. A session's token (a JWT the admin plane
//! signs) names a row here; every request touches the row, so signing out, an idle timeout or
//! a removed account ends the session at once, whatever the token says.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::Row;
use uuid::Uuid;

use hermes_core::{ConsoleSessionId, PersonId, TenantId};

use crate::{Result, views::Admin};

/// A live console session, as a request finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveSession {
    pub id: ConsoleSessionId,
    pub person: PersonId,
    /// Opened through a tenant's own identity provider: valid in that tenant only.
    pub tenant: Option<TenantId>,
    pub expires_at: DateTime<Utc>,
}

impl Admin<'_> {
    /// A link token that signs `person` in once, within `valid_for`. Only its hash is kept.
    pub async fn create_sign_in_link(self, person: PersonId, valid_for: Duration) -> Result<String> {
        let (token, hash) = super::new_secret()?;
        sqlx::query(
            "INSERT INTO sign_in_links (hash, person_id, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))",
        )
        .bind(hash)
        .bind(person.as_uuid())
        .bind(valid_for.as_secs_f64())
        .execute(self.system_pool())
        .await?;
        Ok(token)
    }

    /// Uses a link: the person it signs in, or `None` when it is unknown, used or expired
    /// (or its person is disabled). A link works once, even when two requests race.
    pub async fn redeem_sign_in_link(self, token: &str) -> Result<Option<PersonId>> {
        let person: Option<Uuid> = sqlx::query_scalar(
            "UPDATE sign_in_links l SET used_at = now()
             FROM people p
             WHERE l.hash = $1 AND l.used_at IS NULL AND l.expires_at > now()
               AND p.id = l.person_id AND p.disabled_at IS NULL
             RETURNING l.person_id",
        )
        .bind(super::secret_hash(token))
        .fetch_optional(self.system_pool())
        .await?;
        Ok(person.map(PersonId::from_uuid))
    }

    /// Opens a session for `person` that ends `max_age` from now at the latest; `tenant`: valid
    /// in that tenant only.
    pub async fn open_console_session(
        self,
        person: PersonId,
        tenant: Option<TenantId>,
        max_age: Duration,
        address: &str,
        user_agent: &str,
    ) -> Result<LiveSession> {
        let id = ConsoleSessionId::new();
        let expires_at: DateTime<Utc> = sqlx::query_scalar(
            "INSERT INTO console_sessions (id, person_id, limited_to_tenant, expires_at, address, user_agent)
             VALUES ($1, $2, $3, now() + make_interval(secs => $4), $5, $6) RETURNING expires_at",
        )
        .bind(id.as_uuid())
        .bind(person.as_uuid())
        .bind(tenant.map(|t| t.as_uuid()))
        .bind(max_age.as_secs_f64())
        .bind(address)
        .bind(user_agent.chars().take(300).collect::<String>())
        .fetch_one(self.system_pool())
        .await?;
        Ok(LiveSession { id, person, tenant, expires_at })
    }

    /// The session `id` if it is still live (not signed out, not idle for `idle`, not past its
    /// end, its person not disabled), marking it used now. One statement per request.
    pub async fn touch_console_session(self, id: ConsoleSessionId, idle: Duration) -> Result<Option<LiveSession>> {
        let row = sqlx::query(
            "UPDATE console_sessions s SET last_seen_at = now()
             FROM people p
             WHERE s.id = $1 AND s.ended_at IS NULL AND s.expires_at > now()
               AND s.last_seen_at > now() - make_interval(secs => $2)
               AND p.id = s.person_id AND p.disabled_at IS NULL
             RETURNING s.id, s.person_id, s.limited_to_tenant, s.expires_at",
        )
        .bind(id.as_uuid())
        .bind(idle.as_secs_f64())
        .fetch_optional(self.system_pool())
        .await?;
        row.map(|r| {
            Ok(LiveSession {
                id,
                person: PersonId::from_uuid(r.try_get("person_id")?),
                tenant: r.try_get::<crate::rows::MaybeId, _>("limited_to_tenant")?.into(),
                expires_at: r.try_get("expires_at")?,
            })
        })
        .transpose()
    }

    /// Ends one session (signing out).
    pub async fn end_console_session(self, id: ConsoleSessionId) -> Result<()> {
        sqlx::query("UPDATE console_sessions SET ended_at = now() WHERE id = $1 AND ended_at IS NULL")
            .bind(id.as_uuid())
            .execute(self.system_pool())
            .await?;
        Ok(())
    }

    /// Ends every session of a person but `keep` (a new password ends the others; a disabled
    /// account, all).
    pub async fn end_person_sessions(self, person: PersonId, keep: Option<ConsoleSessionId>) -> Result<u64> {
        let done = sqlx::query(
            "UPDATE console_sessions SET ended_at = now()
             WHERE person_id = $1 AND ended_at IS NULL AND id IS DISTINCT FROM $2",
        )
        .bind(person.as_uuid())
        .bind(keep.map(|k| k.as_uuid()))
        .execute(self.system_pool())
        .await?;
        Ok(done.rows_affected())
    }
}
