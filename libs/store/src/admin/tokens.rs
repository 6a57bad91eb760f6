//! Admin API tokens for automation: `hat_<12 hex>_<secret>`, shown once, stored as SHA-256.
//! A person's token acts as that person, capped by its role and by the person's role now (and
//! dies with the membership); a service token belongs to the tenant alone; a token with no
//! tenant is an operator's, for the whole installation.

use std::time::Duration;

use uuid::Uuid;

use hermes_core::{AdminTokenId, MemberRole, PersonId, TenantId};

use super::audit::{self, ActorKind, Audit, Change};
use crate::{Result, StoreError, views::Admin};

/// A token as listed (never its secret), as the admin API shows it.
pub use hermes_wire::admin::AdminToken;

/// Who a valid token speaks for.
#[derive(Debug, Clone)]
pub struct TokenAuth {
    pub id: AdminTokenId,
    pub name: String,
    /// `None`: an operator's installation token.
    pub tenant: Option<TenantId>,
    pub person: Option<PersonId>,
    /// The token's ceiling, already capped by its person's current role.
    pub role: MemberRole,
    /// Whether it acts for a platform operator (installation tokens only).
    pub operator: bool,
}

/// A presented token's row with what its person is now (`person_role`, `operator`,
/// `disabled`: null for a service token).
#[derive(sqlx::FromRow)]
struct AuthRow {
    #[sqlx(try_from = "uuid::Uuid")]
    id: AdminTokenId,
    name: String,
    /// The token's own tenant, read through `crate::rows` like every row's tenant.
    #[sqlx(try_from = "crate::rows::MaybeId")]
    tenant_id: Option<TenantId>,
    person_id: Option<Uuid>,
    role: String,
    person_role: Option<String>,
    operator: Option<bool>,
    disabled: Option<bool>,
}

/// The longest a token may live.
pub const MAX_TOKEN_LIFETIME: Duration = Duration::from_secs(366 * 24 * 3600);

/// A new token: its id, its shown prefix and the whole secret, once `lifetime` is allowed.
fn mint(lifetime: Duration) -> Result<(AdminTokenId, String, String)> {
    if lifetime.is_zero() || lifetime > MAX_TOKEN_LIFETIME {
        return Err(StoreError::Invalid("a token lives between one second and 366 days".into()));
    }
    let (secret, _) = super::new_secret()?;
    let id = AdminTokenId::new();
    let prefix = format!("hat_{}", &id.as_uuid().simple().to_string()[20..32]);
    let full = format!("{prefix}_{secret}");
    Ok((id, prefix, full))
}

impl Admin<'_> {
    /// Makes a token for `tenant` (`person`: acting as them; `None`: a service token); the
    /// token and its secret, which is not stored and cannot be shown again.
    pub async fn create_admin_token(
        self,
        tenant: TenantId,
        person: Option<PersonId>,
        name: &str,
        role: MemberRole,
        lifetime: Duration,
        by: &Audit,
    ) -> Result<(AdminToken, String)> {
        let (id, prefix, full) = mint(lifetime)?;
        // Who made it: the person, or the person behind the token that made it.
        let actor = uuid::Uuid::parse_str(&by.actor.id).ok();
        let (by_person, by_token) = match by.actor.kind {
            ActorKind::Person => (actor, None),
            ActorKind::Token => (None, actor),
            _ => (None, None),
        };
        let mut tx = self.tenant_tx(tenant).await?;
        let row = sqlx::query(
            "INSERT INTO admin_tokens (id, tenant_id, person_id, name, role, prefix, hash, expires_at, made_by)
             VALUES ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8),
                     COALESCE($9::uuid, (SELECT t.person_id FROM admin_tokens t WHERE t.id = $10::uuid)))
             RETURNING id, name, person_id, role, prefix, expires_at, last_used_at, revoked_at, created_at",
        )
        .bind(id.as_uuid())
        .bind(tenant.as_uuid())
        .bind(person.map(|p| p.as_uuid()))
        .bind(name)
        .bind(role.as_str())
        .bind(&prefix)
        .bind(super::secret_hash(&full))
        .bind(lifetime.as_secs_f64())
        .bind(by_person)
        .bind(by_token)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| StoreError::invalid_on_check(e, "a token's name is 1 to 100 characters"))?;
        // A role outside its vocabulary is `Corrupt`.
        let made: AdminToken = crate::rows::read(&row)?;
        audit::record(&mut tx, Some(tenant), by, Change::new("token.created", "admin_token", id).after(&made)).await?;
        tx.commit().await?;
        Ok((made, full))
    }

    /// `tenant`'s tokens, newest first.
    pub async fn admin_tokens(self, tenant: TenantId) -> Result<Vec<AdminToken>> {
        let rows = sqlx::query(
            "SELECT id, name, person_id, role, prefix, expires_at, last_used_at, revoked_at, created_at
             FROM admin_tokens WHERE tenant_id = $1 ORDER BY created_at DESC LIMIT 500",
        )
        .bind(tenant.as_uuid())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?;
        rows.iter().map(crate::rows::read::<AdminToken>).collect()
    }

    /// Revokes a token of `tenant`: it stops working at once.
    pub async fn revoke_admin_token(self, tenant: TenantId, id: AdminTokenId, by: &Audit) -> Result<()> {
        let sql = "UPDATE admin_tokens SET revoked_at = now() WHERE tenant_id = $1 AND id = $2 AND revoked_at IS NULL";
        self.revoke(tenant, sql, id.as_uuid(), by, Change::new("token.revoked", "admin_token", id)).await
    }

    /// Resolves a presented admin token; `None` for unknown, revoked or expired ones, and for
    /// a person's token whose person has left the tenant or is disabled.
    pub async fn authenticate_admin_token(self, presented: &str) -> Result<Option<TokenAuth>> {
        if !presented.starts_with("hat_") || presented.len() > 128 {
            return Ok(None);
        }
        let row = sqlx::query_as::<_, AuthRow>(
            "UPDATE admin_tokens t SET last_used_at = now()
             WHERE t.hash = $1 AND t.revoked_at IS NULL AND t.expires_at > now()
             RETURNING t.id, t.name, t.tenant_id, t.person_id, t.role,
               (SELECT m.role FROM memberships m WHERE m.tenant_id = t.tenant_id AND m.person_id = t.person_id)
                   AS person_role,
               (SELECT p.operator AND p.disabled_at IS NULL FROM people p WHERE p.id = t.person_id) AS operator,
               (SELECT p.disabled_at IS NOT NULL FROM people p WHERE p.id = t.person_id) AS disabled",
        )
        .bind(super::secret_hash(presented))
        .fetch_optional(self.system_pool())
        .await?;
        let Some(row) = row else { return Ok(None) };
        let (person, tenant) = (row.person_id, row.tenant_id);
        let ceiling: MemberRole = crate::rows::vocab(&row.role)?;
        let operator = row.operator.unwrap_or(false);
        if row.disabled.unwrap_or(false) {
            return Ok(None);
        }
        let role = match (person, tenant) {
            // A person's tenant token: no longer a member, no longer valid (an operator's
            // standing does not pass into a tenant token).
            (Some(_), Some(_)) => match row.person_role {
                Some(now) => ceiling.min(crate::rows::vocab(&now)?),
                None => return Ok(None),
            },
            (Some(_), None) if !operator => return Ok(None),
            _ => ceiling,
        };
        Ok(Some(TokenAuth {
            id: row.id,
            name: row.name,
            tenant,
            person: person.map(PersonId::from_uuid),
            role,
            operator: tenant.is_none() && operator,
        }))
    }

    /// An operator's installation-wide token (no tenant), acting as that operator.
    pub async fn create_operator_token(
        self,
        operator: PersonId,
        name: &str,
        lifetime: Duration,
        by: &Audit,
    ) -> Result<(AdminToken, String)> {
        let (id, prefix, full) = mint(lifetime)?;
        let mut tx = self.system_pool().begin().await?;
        let row = sqlx::query(
            "INSERT INTO admin_tokens (id, tenant_id, person_id, name, role, prefix, hash, expires_at)
             SELECT $1, NULL, p.id, $3, 'owner', $4, $5, now() + make_interval(secs => $6)
             FROM people p WHERE p.id = $2 AND p.operator AND p.disabled_at IS NULL
             RETURNING id, name, person_id, role, prefix, expires_at, last_used_at, revoked_at, created_at",
        )
        .bind(id.as_uuid())
        .bind(operator.as_uuid())
        .bind(name)
        .bind(&prefix)
        .bind(super::secret_hash(&full))
        .bind(lifetime.as_secs_f64())
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(StoreError::NotFound)?;
        let made: AdminToken = crate::rows::read(&row)?;
        audit::record(&mut tx, None, by, Change::new("token.created", "admin_token", id).after(&made)).await?;
        tx.commit().await?;
        Ok((made, full))
    }
}
