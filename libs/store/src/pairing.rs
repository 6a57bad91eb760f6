//! Pairing codes (migration 0020): how a person the bot does not know asks to be let in.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use hermes_core::{ChannelId, TenantId};

use crate::admin::audited::tenant_writes;
use crate::{Result, StoreError, views::Chat};

/// Codes are drawn from 32 characters nobody confuses (no 0/O, no 1/I).
const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
const CODE_LEN: usize = 8;
const CODE_MINUTES: i32 = 60;
const MAX_PENDING: i64 = 3;
const REQUEST_EVERY_MINUTES: i32 = 10;
const MAX_FAILURES: i32 = 5;
const LOCKOUT_MINUTES: i32 = 60;

/// What asking for a code gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PairingStart {
    /// A new code.
    Code { code: String, expires_at: DateTime<Utc> },
    /// The person asked less than ten minutes ago: their code, again.
    Pending { code: String, expires_at: DateTime<Utc> },
    /// Too many codes wait for an admin already.
    Full,
}

/// What approving a code did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PairingApproval {
    /// The person may talk to the bot now; tell them in `chat_id`.
    Approved { user_id: String, chat_id: String },
    /// No such waiting code; approvals lock after five of these.
    WrongCode,
    /// Too many wrong codes: approvals wait until then.
    Locked { until: DateTime<Utc> },
}

/// A code waiting for an admin.
pub use hermes_wire::v1::PairingRequest;

/// A person's code that still waits, given again when they ask too soon.
#[derive(sqlx::FromRow)]
struct Waiting {
    code: String,
    expires_at: DateTime<Utc>,
}

/// An approved code's person, and the chat to tell.
#[derive(sqlx::FromRow)]
struct Approved {
    user_id: String,
    chat_id: String,
}

fn new_code() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..CODE_LEN).map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())])).collect()
}

/// A code as typed: case and spaces do not matter.
fn normalise(code: &str) -> String {
    code.chars().filter(|c| !c.is_whitespace() && *c != '-').collect::<String>().to_uppercase()
}

impl Chat<'_> {
    /// Gives `user_id` a pairing code for `channel`, within the limits.
    pub async fn start_pairing(
        self,
        tenant: TenantId,
        channel: ChannelId,
        user_id: &str,
        user_name: Option<&str>,
        chat_id: &str,
    ) -> Result<PairingStart> {
        let mut tx = self.tenant_tx(tenant).await?;
        lock_channel(&mut tx, tenant, channel).await?;
        sqlx::query(
            "UPDATE pairing_requests SET status = 'expired'
             WHERE channel_id = $1 AND status = 'pending' AND expires_at <= now()",
        )
        .bind(channel.as_uuid())
        .execute(&mut *tx)
        .await?;
        let recent = sqlx::query_as::<_, Waiting>(
            "SELECT code, expires_at FROM pairing_requests
             WHERE channel_id = $1 AND user_id = $2 AND status = 'pending'
               AND created_at > now() - make_interval(mins => $3)
             ORDER BY created_at DESC LIMIT 1",
        )
        .bind(channel.as_uuid())
        .bind(user_id)
        .bind(REQUEST_EVERY_MINUTES)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(Waiting { code, expires_at }) = recent {
            tx.commit().await?;
            return Ok(PairingStart::Pending { code, expires_at });
        }
        let pending: i64 =
            sqlx::query_scalar("SELECT count(*) FROM pairing_requests WHERE channel_id = $1 AND status = 'pending'")
                .bind(channel.as_uuid())
                .fetch_one(&mut *tx)
                .await?;
        if pending >= MAX_PENDING {
            tx.commit().await?;
            return Ok(PairingStart::Full);
        }
        // The person's older codes give way to the new one.
        sqlx::query("UPDATE pairing_requests SET status = 'expired' WHERE channel_id = $1 AND user_id = $2 AND status = 'pending'")
            .bind(channel.as_uuid())
            .bind(user_id)
            .execute(&mut *tx)
            .await?;
        let code = new_code();
        let expires_at: DateTime<Utc> = sqlx::query_scalar(
            "INSERT INTO pairing_requests (tenant_id, channel_id, code, user_id, user_name, chat_id, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(mins => $7)) RETURNING expires_at",
        )
        .bind(tenant.as_uuid())
        .bind(channel.as_uuid())
        .bind(&code)
        .bind(crate::messages::without_nul(user_id))
        .bind(user_name.map(crate::messages::without_nul))
        .bind(crate::messages::without_nul(chat_id))
        .bind(CODE_MINUTES)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(PairingStart::Code { code, expires_at })
    }

    /// The codes waiting for an admin.
    pub async fn pending_pairings(self, tenant: TenantId, channel: ChannelId) -> Result<Vec<PairingRequest>> {
        let rows = sqlx::query(
            "SELECT code, user_id, user_name, created_at, expires_at FROM pairing_requests
             WHERE tenant_id = $1 AND channel_id = $2 AND status = 'pending' AND expires_at > now()
             ORDER BY created_at",
        )
        .bind(tenant.as_uuid())
        .bind(channel.as_uuid())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?;
        rows.iter().map(crate::rows::read::<PairingRequest>).collect()
    }
}

tenant_writes! {
    in Chat;
    /// Approves a waiting code: its person joins the channel's allowlist.
    pub async fn approve_pairing(channel: ChannelId, code: &str) -> Result<PairingApproval>
        = approve_pairing_on in transaction;
}

/// Locks the tenant's `channel` until the transaction ends: one pairing step at a time per
/// channel keeps the counts right. Until when wrong codes locked approvals out, if they did;
/// `NotFound` when the channel is not the tenant's.
async fn lock_channel(conn: &mut PgConnection, tenant: TenantId, channel: ChannelId) -> Result<Option<DateTime<Utc>>> {
    let locked =
        sqlx::query_scalar("SELECT pairing_locked_until FROM channels WHERE tenant_id = $1 AND id = $2 FOR UPDATE")
            .bind(tenant.as_uuid())
            .bind(channel.as_uuid())
            .fetch_optional(conn)
            .await?
            .ok_or(StoreError::NotFound)?;
    Ok(locked)
}

/// [`Chat::approve_pairing`](crate::views::Chat::approve_pairing) on a connection already set to `tenant`.
async fn approve_pairing_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    channel: ChannelId,
    code: &str,
) -> Result<PairingApproval> {
    let locked = lock_channel(&mut *conn, tenant, channel).await?;
    if let Some(until) = locked.filter(|until| *until > Utc::now()) {
        return Ok(PairingApproval::Locked { until });
    }
    let found = sqlx::query_as::<_, Approved>(
        "UPDATE pairing_requests SET status = 'approved'
         WHERE channel_id = $1 AND code = $2 AND status = 'pending' AND expires_at > now()
         RETURNING user_id, chat_id",
    )
    .bind(channel.as_uuid())
    .bind(normalise(code))
    .fetch_optional(&mut *conn)
    .await?;
    let Some(Approved { user_id, chat_id }) = found else {
        let until: Option<DateTime<Utc>> = sqlx::query_scalar(
            "UPDATE channels SET pairing_failures = CASE WHEN pairing_failures + 1 >= $3 THEN 0 ELSE pairing_failures + 1 END,
                    pairing_locked_until = CASE WHEN pairing_failures + 1 >= $3
                                                THEN now() + make_interval(mins => $4) END
             WHERE tenant_id = $1 AND id = $2 RETURNING pairing_locked_until",
        )
        .bind(tenant.as_uuid())
        .bind(channel.as_uuid())
        .bind(MAX_FAILURES)
        .bind(LOCKOUT_MINUTES)
        .fetch_one(&mut *conn)
        .await?;
        return Ok(match until {
            Some(until) => PairingApproval::Locked { until },
            None => PairingApproval::WrongCode,
        });
    };
    sqlx::query(
        "UPDATE channels SET allow_users = array_append(allow_users, $3), pairing_failures = 0, updated_at = now()
         WHERE tenant_id = $1 AND id = $2 AND NOT ($3 = ANY(allow_users))",
    )
    .bind(tenant.as_uuid())
    .bind(channel.as_uuid())
    .bind(&user_id)
    .execute(&mut *conn)
    .await?;
    Ok(PairingApproval::Approved { user_id, chat_id })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_use_only_unambiguous_characters_and_typing_is_forgiving() {
        let code = new_code();
        assert_eq!(code.len(), 8);
        assert!(code.bytes().all(|b| ALPHABET.contains(&b)));
        assert!(
            !ALPHABET.contains(&b'0')
                && !ALPHABET.contains(&b'O')
                && !ALPHABET.contains(&b'1')
                && !ALPHABET.contains(&b'I')
        );
        assert_eq!(ALPHABET.len(), 32);
        assert_eq!(normalise(" abcd-efgh "), "ABCDEFGH");
    }
}
