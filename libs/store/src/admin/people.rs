//! People and how they sign in: accounts (an email, an optional argon2id password hash, the
//! operator flag), failed-password counting and lockout, and which tenants a person belongs to.
//! All of it comes before a tenant is known (it is where a console caller's tenants come
//! from), so it runs as the system role, like API-key authentication.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use hermes_core::{ConsoleSessionId, MemberRole, PersonId, TenantId};

use super::audit::{self, Audit, Change};
use crate::{Result, StoreError, views::Admin};

/// A person, without secrets, as the admin API shows them.
pub use hermes_wire::admin::Person;

/// What checking a password needs.
#[derive(Debug, Clone)]
pub struct SignInRecord {
    pub person: Person,
    pub password_hash: Option<String>,
    pub locked_until: Option<DateTime<Utc>>,
}

#[derive(sqlx::FromRow)]
struct SignInRow {
    #[sqlx(flatten)]
    person: Person,
    password_hash: Option<String>,
    locked_until: Option<DateTime<Utc>>,
}

/// A tenant a person belongs to, and as what.
pub use hermes_wire::admin::Membership;

/// A tenant a person may act in: as a member with `role`, or (`None`) as an operator.
#[derive(sqlx::FromRow)]
struct TenantAccess {
    #[sqlx(try_from = "crate::rows::Id")]
    tenant_id: TenantId,
    role: Option<String>,
}

/// The columns a [`Person`] is read from, of `people p`.
macro_rules! person_columns {
    () => {
        "p.id, p.email, p.display_name, p.operator, p.has_password, p.email_proven, p.operator_sso,
         p.disabled_at IS NOT NULL AS disabled, p.created_at"
    };
}
pub(crate) use person_columns;

/// A refused email address as `Invalid`, other errors as they are.
pub(crate) fn email_error(e: sqlx::Error, email: &str) -> StoreError {
    StoreError::invalid_on_check(e, format!("{email:?} is not an email address"))
}

impl Admin<'_> {
    /// The person with `email`, made if there is none (proven: an operator vouches for the
    /// address); `operator` makes them a platform operator (it never unmakes one). Recorded in
    /// the installation's audit log when it changes anything.
    pub async fn ensure_person(self, email: &str, display_name: &str, operator: bool, by: &Audit) -> Result<Person> {
        let email = super::normalize_email(email);
        let mut tx = self.system_pool().begin().await?;
        let before: Option<Person> =
            sqlx::query_as(concat!("SELECT ", person_columns!(), " FROM people p WHERE p.email = $1"))
                .bind(&email)
                .fetch_optional(&mut *tx)
                .await?;
        let mut after: Person = sqlx::query_as(concat!(
            "INSERT INTO people AS p (id, email, display_name, operator) VALUES ($1, $2, $3, $4)
             ON CONFLICT (email) DO UPDATE SET operator = p.operator OR EXCLUDED.operator
             RETURNING ",
            person_columns!()
        ))
        .bind(PersonId::new().as_uuid())
        .bind(&email)
        .bind(display_name)
        .bind(operator)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| email_error(e, &email))?;
        // Made an operator: an unproven account first loses what was set on it (its claimer's
        // password must not become an operator's).
        if operator && super::proof::drop_unvouched(&mut tx, after.id, false).await? {
            after.has_password = false;
        }
        if before.as_ref() != Some(&after) {
            let action = if before.is_none() { "person.created" } else { "person.updated" };
            let change = Change::new(action, "person", after.id).after(&after);
            let change = match &before {
                Some(b) => change.before(b),
                None => change,
            };
            audit::record(&mut tx, None, by, change).await?;
        }
        tx.commit().await?;
        Ok(after)
    }

    /// A person by id (`NotFound` when gone).
    pub async fn person(self, id: PersonId) -> Result<Person> {
        sqlx::query_as(concat!("SELECT ", person_columns!(), " FROM people p WHERE p.id = $1"))
            .bind(id.as_uuid())
            .fetch_optional(self.system_pool())
            .await?
            .ok_or(StoreError::NotFound)
    }

    /// What a password sign-in checks, by email.
    pub async fn sign_in_record(self, email: &str) -> Result<Option<SignInRecord>> {
        let row = sqlx::query_as::<_, SignInRow>(concat!(
            "SELECT ",
            person_columns!(),
            ", p.password_hash, p.locked_until FROM people p WHERE p.email = $1"
        ))
        .bind(super::normalize_email(email))
        .fetch_optional(self.system_pool())
        .await?;
        Ok(row.map(|r| SignInRecord { person: r.person, password_hash: r.password_hash, locked_until: r.locked_until }))
    }

    /// Counts a wrong password; the `lock_after`th in a row locks the account until
    /// `lock_for` from now. Returns when the lock ends, if it is locked now.
    pub async fn record_failed_sign_in(
        self,
        id: PersonId,
        lock_after: u32,
        lock_for: std::time::Duration,
    ) -> Result<Option<DateTime<Utc>>> {
        let until: Option<DateTime<Utc>> = sqlx::query_scalar(
            "UPDATE people SET failed_sign_ins = failed_sign_ins + 1,
                    locked_until = CASE WHEN failed_sign_ins + 1 >= $2
                                        THEN now() + make_interval(secs => $3) ELSE locked_until END
             WHERE id = $1 RETURNING locked_until",
        )
        .bind(id.as_uuid())
        .bind(i32::try_from(lock_after).unwrap_or(i32::MAX))
        .bind(lock_for.as_secs_f64())
        .fetch_optional(self.system_pool())
        .await?
        .flatten();
        Ok(until.filter(|t| *t > Utc::now()))
    }

    /// A sign-in succeeded: the count of wrong passwords starts again.
    pub async fn record_sign_in(self, id: PersonId) -> Result<()> {
        sqlx::query("UPDATE people SET failed_sign_ins = 0, locked_until = NULL WHERE id = $1")
            .bind(id.as_uuid())
            .execute(self.system_pool())
            .await?;
        Ok(())
    }

    /// Sets a person's password hash (an argon2id PHC string made by the caller). Their
    /// console sessions but `keep` end and their admin tokens are revoked in the same
    /// transaction: a new password shuts out whoever knew the old one.
    pub async fn set_password_hash(
        self,
        id: PersonId,
        hash: &str,
        keep: Option<ConsoleSessionId>,
        by: &Audit,
    ) -> Result<()> {
        let mut tx = self.system_pool().begin().await?;
        let done =
            sqlx::query("UPDATE people SET password_hash = $2, failed_sign_ins = 0, locked_until = NULL WHERE id = $1")
                .bind(id.as_uuid())
                .bind(hash)
                .execute(&mut *tx)
                .await?;
        crate::require_changed(&done)?;
        sqlx::query(
            "UPDATE console_sessions SET ended_at = now()
             WHERE person_id = $1 AND ended_at IS NULL AND id IS DISTINCT FROM $2",
        )
        .bind(id.as_uuid())
        .bind(keep.map(|k| k.as_uuid()))
        .execute(&mut *tx)
        .await?;
        let revoked =
            sqlx::query("UPDATE admin_tokens SET revoked_at = now() WHERE person_id = $1 AND revoked_at IS NULL")
                .bind(id.as_uuid())
                .execute(&mut *tx)
                .await?
                .rows_affected();
        let change =
            Change::new("person.password_set", "person", id).after(serde_json::json!({ "tokens_revoked": revoked }));
        audit::record(&mut tx, None, by, change).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The tenants a person belongs to, by name.
    pub async fn memberships_of(self, id: PersonId) -> Result<Vec<Membership>> {
        let rows = sqlx::query(
            "SELECT m.tenant_id, t.name AS tenant_name, m.role FROM memberships m JOIN tenants t ON t.id = m.tenant_id
             WHERE m.person_id = $1 ORDER BY t.name",
        )
        .bind(id.as_uuid())
        .fetch_all(self.system_pool())
        .await?;
        // A role outside its vocabulary is `Corrupt`.
        rows.iter().map(crate::rows::read::<Membership>).collect()
    }

    /// The tenant `raw` names, when `person` may act in it: as a member (with the role), or
    /// as an operator (any tenant that exists; `None` role). `NotFound` otherwise: to a
    /// person outside it, another tenant does not exist.
    pub async fn tenant_for_person(self, person: PersonId, raw: Uuid) -> Result<(TenantId, Option<MemberRole>)> {
        let row = sqlx::query_as::<_, TenantAccess>(
            "SELECT t.id AS tenant_id, m.role FROM tenants t
             JOIN people p ON p.id = $1 AND p.disabled_at IS NULL
             LEFT JOIN memberships m ON m.tenant_id = t.id AND m.person_id = p.id
             WHERE t.id = $2 AND (m.role IS NOT NULL OR p.operator)",
        )
        .bind(person.as_uuid())
        .bind(raw)
        .fetch_optional(self.system_pool())
        .await?
        .ok_or(StoreError::NotFound)?;
        Ok((row.tenant_id, row.role.as_deref().map(crate::rows::vocab).transpose()?))
    }

    /// Every tenant, by name, in pages (`after`: the last name of the previous page), for
    /// operators.
    pub async fn tenants_page(self, after: Option<&str>, limit: u32) -> Result<Vec<crate::Tenant>> {
        let rows = sqlx::query_as::<_, crate::Tenant>(
            "SELECT id, name, created_at FROM tenants
             WHERE ($1::text IS NULL OR name > $1) ORDER BY name LIMIT $2",
        )
        .bind(after)
        .bind(i64::from(limit.clamp(1, 500)))
        .fetch_all(self.system_pool())
        .await?;
        Ok(rows)
    }
}
