//! A tenant's own identity provider (migration 0047): set by an operator, it signs in people
//! whose verified email is at one of the tenant's domains. Looking a provider up by an email's
//! domain comes before anyone is signed in, so it runs as the system role; everything else is
//! the tenant's. The client secret is sealed at rest and never read back out to a person.

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use hermes_core::{MemberRole, TenantId};

use super::audit::{self, Audit, Change};
use crate::{Result, SecretBox, StoreError, views::Admin};

/// What an operator sets.
#[derive(Debug, Clone)]
pub struct SsoSettings {
    pub issuer: String,
    pub client_id: String,
    /// `None`: keep the stored secret (a public client has none); `Some("")` clears it.
    pub client_secret: Option<String>,
    pub scopes: String,
    /// Lower-case domains (`acme.com`); a person at one of them signs in here.
    pub email_domains: Vec<String>,
    /// Whether someone of these domains who is not a member yet joins on signing in, and as
    /// what; `None`: only existing members may sign in.
    pub join_as: Option<MemberRole>,
    /// Accept ID tokens without `email_verified: true` (a provider that never sends it).
    pub trust_unverified_email: bool,
}

/// The provider as shown (never its secret).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TenantSso {
    pub issuer: String,
    pub client_id: String,
    pub has_client_secret: bool,
    pub scopes: String,
    pub email_domains: Vec<String>,
    pub join_as: Option<MemberRole>,
    pub trust_unverified_email: bool,
    pub updated_at: DateTime<Utc>,
}

/// The provider as the sign-in flow uses it, its secret opened.
#[derive(Debug, Clone)]
pub struct SsoProvider {
    pub tenant: TenantId,
    pub issuer: String,
    pub client_id: String,
    pub client_secret: Option<String>,
    pub scopes: String,
    pub email_domains: Vec<String>,
    pub join_as: Option<MemberRole>,
    pub trust_unverified_email: bool,
}

fn context(tenant: TenantId) -> String {
    format!("tenant-sso:{tenant}")
}

/// A provider row with its domains (a macro, so statements stay static strings).
macro_rules! sso_select {
    () => {
        "SELECT p.tenant_id, p.issuer, p.client_id, p.client_secret, p.scopes, p.join_as, p.trust_unverified_email,
                p.updated_at,
                ARRAY(SELECT d.domain FROM sso_domains d WHERE d.tenant_id = p.tenant_id ORDER BY d.domain) AS domains
         FROM tenant_identity_providers p"
    };
}

/// A provider's row ([`sso_select!`]), its secret still sealed.
#[derive(sqlx::FromRow)]
struct SsoRow {
    tenant_id: Uuid,
    issuer: String,
    client_id: String,
    client_secret: Option<Vec<u8>>,
    scopes: String,
    join_as: Option<String>,
    trust_unverified_email: bool,
    updated_at: DateTime<Utc>,
    domains: Vec<String>,
}

impl TryFrom<SsoRow> for TenantSso {
    type Error = StoreError;

    fn try_from(row: SsoRow) -> Result<Self> {
        Ok(TenantSso {
            issuer: row.issuer,
            client_id: row.client_id,
            has_client_secret: row.client_secret.is_some(),
            scopes: row.scopes,
            email_domains: row.domains,
            join_as: row
                .join_as
                .as_deref()
                .map(|r| r.parse::<MemberRole>().map_err(|_| StoreError::Corrupt(format!("role {r:?}"))))
                .transpose()?,
            trust_unverified_email: row.trust_unverified_email,
            updated_at: row.updated_at,
        })
    }
}

fn provider(row: SsoRow, secrets: Option<&SecretBox>) -> Result<SsoProvider> {
    #[expect(clippy::disallowed_methods, reason = "the tenant whose provider the operator set for this domain")]
    let tenant = TenantId::from_authenticated(row.tenant_id);
    let client_secret = match &row.client_secret {
        Some(sealed) => {
            let opened =
                SecretBox::required(secrets, "a tenant's identity provider")?.open(&context(tenant), sealed)?;
            Some(String::from_utf8(opened).map_err(|_| StoreError::Corrupt("client secret".into()))?)
        }
        None => None,
    };
    let shown = TenantSso::try_from(row)?;
    Ok(SsoProvider {
        tenant,
        issuer: shown.issuer,
        client_id: shown.client_id,
        client_secret,
        scopes: shown.scopes,
        email_domains: shown.email_domains,
        join_as: shown.join_as,
        trust_unverified_email: shown.trust_unverified_email,
    })
}

impl Admin<'_> {
    /// Sets the tenant's provider and its domains (replacing both). `Conflict` when a domain
    /// is another tenant's.
    pub async fn set_tenant_sso(
        self,
        tenant: TenantId,
        settings: &SsoSettings,
        secrets: Option<&SecretBox>,
        by: &Audit,
    ) -> Result<TenantSso> {
        let sealed = match settings.client_secret.as_deref() {
            Some("") | None => None,
            Some(secret) => {
                Some(SecretBox::required(secrets, "a client secret")?.seal(&context(tenant), secret.as_bytes())?)
            }
        };
        let clear = settings.client_secret.as_deref() == Some("");
        let mut tx = self.tenant_tx(tenant).await?;
        let before = sqlx::query_as::<_, SsoRow>(concat!(sso_select!(), " WHERE p.tenant_id = $1"))
            .bind(tenant.as_uuid())
            .fetch_optional(&mut *tx)
            .await?
            .map(TenantSso::try_from)
            .transpose()?;
        sqlx::query(
            "INSERT INTO tenant_identity_providers
                 (tenant_id, issuer, client_id, client_secret, scopes, join_as, trust_unverified_email)
             VALUES ($1, $2, $3, $4, $5, $6, $8)
             ON CONFLICT (tenant_id) DO UPDATE SET issuer = EXCLUDED.issuer, client_id = EXCLUDED.client_id,
                 client_secret = CASE WHEN $7 THEN NULL
                                      ELSE COALESCE(EXCLUDED.client_secret, tenant_identity_providers.client_secret) END,
                 scopes = EXCLUDED.scopes, join_as = EXCLUDED.join_as,
                 trust_unverified_email = EXCLUDED.trust_unverified_email, updated_at = now()",
        )
        .bind(tenant.as_uuid())
        .bind(&settings.issuer)
        .bind(&settings.client_id)
        .bind(sealed)
        .bind(&settings.scopes)
        .bind(settings.join_as.map(|r| r.as_str()))
        .bind(clear)
        .bind(settings.trust_unverified_email)
        .execute(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM sso_domains WHERE tenant_id = $1").bind(tenant.as_uuid()).execute(&mut *tx).await?;
        for domain in &settings.email_domains {
            sqlx::query("INSERT INTO sso_domains (domain, tenant_id) VALUES ($1, $2)")
                .bind(domain)
                .bind(tenant.as_uuid())
                .execute(&mut *tx)
                .await
                .map_err(|e| StoreError::conflict_on_unique(e, &format!("the email domain {domain}")))?;
        }
        let after: TenantSso = sqlx::query_as::<_, SsoRow>(concat!(sso_select!(), " WHERE p.tenant_id = $1"))
            .bind(tenant.as_uuid())
            .fetch_one(&mut *tx)
            .await?
            .try_into()?;
        let change = Change::new("sso.configured", "tenant", tenant).before(&before).after(&after);
        audit::record(&mut tx, Some(tenant), by, change).await?;
        tx.commit().await?;
        Ok(after)
    }

    /// The tenant's provider as shown; `NotFound` when it has none.
    pub async fn tenant_sso(self, tenant: TenantId) -> Result<TenantSso> {
        sqlx::query_as::<_, SsoRow>(concat!(sso_select!(), " WHERE p.tenant_id = $1"))
            .bind(tenant.as_uuid())
            .fetch_optional(&mut *self.as_tenant(tenant).await?)
            .await?
            .ok_or(StoreError::NotFound)?
            .try_into()
    }

    /// Removes the tenant's provider and frees its domains; false when it had none.
    pub async fn delete_tenant_sso(self, tenant: TenantId, by: &Audit) -> Result<bool> {
        let mut tx = self.tenant_tx(tenant).await?;
        let done = sqlx::query("DELETE FROM tenant_identity_providers WHERE tenant_id = $1")
            .bind(tenant.as_uuid())
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        audit::record(&mut tx, Some(tenant), by, Change::new("sso.removed", "tenant", tenant)).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// The provider for an email's domain (lower-case), if a tenant has one: for signing in.
    pub async fn sso_for_domain(self, domain: &str, secrets: Option<&SecretBox>) -> Result<Option<SsoProvider>> {
        let row = sqlx::query_as::<_, SsoRow>(concat!(
            sso_select!(),
            " JOIN sso_domains s ON s.tenant_id = p.tenant_id WHERE s.domain = $1"
        ))
        .bind(domain)
        .fetch_optional(self.system_pool())
        .await?;
        row.map(|r| provider(r, secrets)).transpose()
    }

    /// The tenant's provider, opened, for finishing a sign-in it began.
    pub async fn sso_provider(self, tenant: TenantId, secrets: Option<&SecretBox>) -> Result<Option<SsoProvider>> {
        let row = sqlx::query_as::<_, SsoRow>(concat!(sso_select!(), " WHERE p.tenant_id = $1"))
            .bind(tenant.as_uuid())
            .fetch_optional(&mut *self.as_tenant(tenant).await?)
            .await?;
        row.map(|r| provider(r, secrets)).transpose()
    }

    /// Whether a tenant's own provider serves an email domain (lower-case).
    pub async fn domain_has_own_provider(self, domain: &str) -> Result<bool> {
        Ok(sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM sso_domains WHERE domain = $1)")
            .bind(domain)
            .fetch_one(self.system_pool())
            .await?)
    }

    /// Whether any tenant has a provider (the sign-in page then asks for an email first).
    pub async fn any_tenant_sso(self) -> Result<bool> {
        Ok(sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM sso_domains)").fetch_one(self.system_pool()).await?)
    }
}
