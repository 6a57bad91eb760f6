//! The second wall: which Postgres role a query runs as (migration 0040).
//!
//! Every query of the store filters by the tenant its caller authenticated; row-level security
//! makes Postgres enforce the same, so a query that forgets its `WHERE tenant_id` finds nothing
//! of another tenant's. The store holds two pools, each of whose connections runs
//! `SET ROLE` once when it opens:
//! - the tenant pool (`hermes_tenant`): [`Store::as_tenant`] and [`Store::tenant_tx`] are the
//!   only ways to one of its connections, and both name the tenant first (`hermes.tenant_id`,
//!   which the policies read). A connection is set again each time it is handed out, so what
//!   a previous user set never carries over.
//! - the system pool (`hermes_system`, policies `system_paths`): [`Store::system_pool`], for the
//!   queries that span tenants (`system/`) or come before a tenant is known (authentication,
//!   the operator's tenant commands, installation-wide prices and bundled skills).
//!
//! The owner (the configured database user) runs only migrations and `ANALYZE`.
//!
//! The roles are a wall against a forgotten filter, not against SQL injection: a statement that
//! could run `RESET ROLE` would be the owner again. Every query binds its values.

use std::sync::Arc;
use std::time::Duration;

use hermes_core::TenantId;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{AssertSqlSafe, Connection, PgConnection, PgPool, Postgres, Transaction};

use crate::{Result, Store};

/// The two roles of migration 0040.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Tenant,
    System,
}

impl Role {
    fn set_role(self) -> &'static str {
        match self {
            Role::Tenant => "SET ROLE hermes_tenant",
            Role::System => "SET ROLE hermes_system",
        }
    }
}

/// A connection of the tenant role that sees only one tenant's rows.
pub(crate) type TenantConn = PoolConnection<Postgres>;

/// The store's pools, one per role, and how to reach the database as its owner.
#[derive(Clone)]
pub(crate) struct Pools {
    tenant: PgPool,
    system: PgPool,
    /// Shared: a `Store` is cloned into every turn and request, and these options are large.
    /// Replaced when the primary moves (`servers.rs`).
    owner: Arc<std::sync::RwLock<Arc<PgConnectOptions>>>,
}

impl Pools {
    /// Pools that open connections when first asked (the roles may not exist before the first
    /// migration). The system pool is a quarter of the tenant pool's size, at least two.
    pub(crate) fn lazy(owner: PgConnectOptions, max_connections: u32, acquire_timeout: Duration) -> Self {
        let system_size = (max_connections / 4).max(2);
        Self {
            tenant: role_pool(&owner, Role::Tenant, max_connections, acquire_timeout),
            system: role_pool(&owner, Role::System, system_size, acquire_timeout),
            owner: Arc::new(std::sync::RwLock::new(Arc::new(owner))),
        }
    }

    /// One connection as the owner (migrations, `ANALYZE`).
    pub(crate) async fn owner(&self) -> Result<PgConnection> {
        let owner = self.owner.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        Ok(PgConnection::connect_with(&owner).await?)
    }

    /// Whether the server the pools connect to is in recovery (a standby), asked on a pooled
    /// connection rather than a new one.
    pub(crate) async fn in_recovery(&self) -> Result<bool> {
        Ok(sqlx::query_scalar("SELECT pg_is_in_recovery()").fetch_one(&self.system).await?)
    }

    /// Opens every new connection on `server` from now on (the primary moved there); open
    /// connections to the old one fail and are dropped.
    pub(crate) fn follow(&self, server: &PgConnectOptions) {
        self.tenant.set_connect_options(server.clone());
        self.system.set_connect_options(server.clone());
        *self.owner.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(server.clone());
    }
}

/// A connection idle at least this long is pinged before it is handed out. One in steady use
/// is not: sqlx's default pings on every checkout, a round trip per query that a busy worker
/// pays dozens of times a turn. A connection that broke in use never comes back (sqlx closes
/// it when its release ping fails), so what a ping would catch is one that died while idle.
const PING_WHEN_IDLE: Duration = Duration::from_secs(1);

fn role_pool(owner: &PgConnectOptions, role: Role, size: u32, acquire_timeout: Duration) -> PgPool {
    PgPoolOptions::new()
        .max_connections(size)
        .acquire_timeout(acquire_timeout)
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= PING_WHEN_IDLE {
                    conn.ping().await?;
                }
                Ok(true)
            })
        })
        .after_connect(move |conn, _| {
            Box::pin(async move {
                sqlx::raw_sql(role.set_role()).execute(conn).await?;
                Ok(())
            })
        })
        .connect_lazy_with(owner.clone())
}

impl Store {
    /// A connection that sees and writes only `tenant`'s rows: one round trip to name the
    /// tenant, then the caller's statements. Take one per method and reuse it for every
    /// statement of that method.
    pub(crate) async fn as_tenant(&self, tenant: TenantId) -> Result<TenantConn> {
        let mut conn = self.pools.tenant.acquire().await?;
        sqlx::query("SELECT set_config('hermes.tenant_id', $1::uuid::text, false)")
            .bind(tenant.as_uuid())
            .execute(&mut *conn)
            .await?;
        Ok(conn)
    }

    /// A transaction that sees and writes only `tenant`'s rows. Naming the tenant rides on the
    /// `BEGIN` (one round trip, as a plain `begin()`), and lasts until the transaction ends.
    pub(crate) async fn tenant_tx(&self, tenant: TenantId) -> Result<Transaction<'static, Postgres>> {
        // A UUID's text form is hex digits and dashes: nothing to escape.
        let begin = format!("BEGIN; SET LOCAL hermes.tenant_id = '{}'", tenant.as_uuid());
        Ok(self.pools.tenant.begin_with(AssertSqlSafe(begin)).await?)
    }

    /// The pool of the named system paths: cross-tenant work, and what comes before a tenant
    /// is known. Only `system/` and the few callers its module docs list use it.
    pub(crate) fn system_pool(&self) -> &PgPool {
        &self.pools.system
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    /// Outside `system/`, the system role serves only these (the module docs of `system` say
    /// why): a new use must be added here on purpose, and named there.
    const NAMED: [(&str, usize); 13] = [
        ("api_keys.rs", 1),
        ("audit.rs", 2),
        // The installation's own audited changes (a new tenant).
        ("audited.rs", 1),
        ("console.rs", 6),
        // Whether an invited address is an operator's; accepting (the link names no tenant).
        ("invitations.rs", 2),
        ("lib.rs", 2),
        ("people.rs", 9),
        ("pricing.rs", 2),
        // Proving an address, an operator's sign-in choice, identities at providers.
        ("proof.rs", 4),
        ("skills.rs", 1),
        // Which tenant's provider signs in an email's domain (before anyone is signed in).
        ("sso.rs", 3),
        ("tenants.rs", 2),
        ("tokens.rs", 2),
    ];

    fn uses(dir: &Path, found: &mut BTreeMap<String, usize>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "system") {
                    uses(&path, found);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let n = text.matches("self.system_pool()").count();
                if n > 0 && path.file_name().is_some_and(|n| n != "walls.rs") {
                    found.insert(path.file_name().unwrap().to_string_lossy().into_owned(), n);
                }
            }
        }
    }

    #[test]
    fn the_system_role_serves_only_the_named_paths() {
        let mut found = BTreeMap::new();
        uses(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut found);
        let named: BTreeMap<String, usize> = NAMED.iter().map(|(f, n)| ((*f).to_owned(), *n)).collect();
        assert_eq!(found, named, "tenant-scoped code must use as_tenant/tenant_tx; see system/mod.rs");
    }
}
