//! An admin change and its audit entry in one transaction. A handler opens an [`AuditedTx`]
//! (in a tenant, or the installation's), makes its writes through it (the same writes the
//! [`Store`] offers, each in its own module) and ends it with [`AuditedTx::commit`], which
//! records the entry in that transaction: the change and its entry commit together or not at
//! all, and dropping the transaction (an error, a refusal) rolls everything back.
//!
//! The [`Store`]'s own methods stay unaudited for the callers that must not audit (the worker,
//! the tenant API, `hermesctl`, which records its own `cli.command` entry). A write both offer
//! is stated once, with [`tenant_writes!`].

use sqlx::{PgConnection, Postgres, Transaction};

use hermes_core::TenantId;

use super::audit::{self, Audit, Change};
use crate::{Result, Store};

/// The installation's own scope (tenants made, operators' changes): entries with no tenant.
#[derive(Debug, Clone, Copy)]
pub struct Installation;

/// A transaction in `scope` (a tenant, or [`Installation`]) whose commit records who made the
/// change and what it was.
#[must_use = "an audited change is rolled back unless committed with its entry"]
pub struct AuditedTx<Scope = TenantId> {
    tx: Transaction<'static, Postgres>,
    scope: Scope,
    by: Audit,
}

impl Store {
    /// Begins a change in `tenant` that `by` makes.
    pub async fn audited(&self, tenant: TenantId, by: Audit) -> Result<AuditedTx> {
        Ok(AuditedTx { tx: self.tenant_tx(tenant).await?, scope: tenant, by })
    }

    /// Begins a change to the installation (a new tenant) that `by` makes.
    pub async fn audited_installation(&self, by: Audit) -> Result<AuditedTx<Installation>> {
        Ok(AuditedTx { tx: self.system_pool().begin().await?, scope: Installation, by })
    }
}

impl<Scope> AuditedTx<Scope> {
    /// The transaction's connection, for the writes of the store's modules.
    pub(crate) fn conn(&mut self) -> &mut PgConnection {
        &mut self.tx
    }

    async fn finish(mut self, tenant: Option<TenantId>, change: Change) -> Result<()> {
        audit::record(&mut self.tx, tenant, &self.by, change).await?;
        self.tx.commit().await?;
        Ok(())
    }

    /// Commits what a refused attempt leaves behind, with no entry: a wrong pairing code
    /// counts toward the channel's lockout though nothing was changed for anyone. Not for
    /// changes.
    pub async fn commit_refusal(self) -> Result<()> {
        self.tx.commit().await?;
        Ok(())
    }
}

impl AuditedTx {
    /// The tenant the change is made in.
    pub fn tenant(&self) -> TenantId {
        self.scope
    }

    /// Records `change` and commits it with the writes made so far.
    pub async fn commit(self, change: Change) -> Result<()> {
        let tenant = self.scope;
        self.finish(Some(tenant), change).await
    }
}

impl AuditedTx<Installation> {
    /// Records `change` as the installation's and commits it with the writes made so far.
    pub async fn commit(self, change: Change) -> Result<()> {
        self.finish(None, change).await
    }
}

/// States each of a module's tenant writes once for both of its callers. For
/// `in View; pub async fn name(args..) -> Result<T> = name_on;` it makes
/// - `View::name(self, tenant, args..)` on the store's view `View` (`views.rs`), which runs the write on a connection of `tenant`
///   (`= name_on in transaction;`: in a transaction of its own, committed when the write
///   succeeds, for a write of several statements that land together or not at all), and
/// - `AuditedTx::name(&mut self, args..)`, which runs it in the audited change's transaction,
///
/// both by calling the module's private `name_on(conn, tenant, args..)`, where the write is.
/// The doc comments given are the store method's; the audited one points to it.
macro_rules! tenant_writes {
    (in $view:ident; $(
        $(#[$doc:meta])*
        pub async fn $name:ident $(<$($generic:ident),+>)? ($($arg:ident: $ty:ty),* $(,)?) -> $out:ty
            = $on:ident $(in $transaction:ident)?;
    )+) => {
        impl $crate::views::$view<'_> {$(
            $(#[$doc])*
            pub async fn $name $(<$($generic),+>)? (
                self,
                tenant: hermes_core::TenantId,
                $($arg: $ty),*
            ) -> $out {
                $crate::admin::audited::tenant_writes!(@store self, tenant, $on($($arg),*) $(in $transaction)?)
            }
        )+}

        impl $crate::admin::AuditedTx {$(
            #[doc = concat!(
                "[`", stringify!($view), "::", stringify!($name), "`](crate::views::", stringify!($view), "::", stringify!($name), ") in an audited change."
            )]
            pub async fn $name $(<$($generic),+>)? (&mut self, $($arg: $ty),*) -> $out {
                let tenant = self.tenant();
                $on(self.conn(), tenant, $($arg),*).await
            }
        )+}
    };
    (@store $store:ident, $tenant:ident, $on:ident($($arg:ident),*)) => {
        $on(&mut *$store.as_tenant($tenant).await?, $tenant, $($arg),*).await
    };
    (@store $store:ident, $tenant:ident, $on:ident($($arg:ident),*) in transaction) => {{
        let mut tx = $store.tenant_tx($tenant).await?;
        let done = $on(&mut tx, $tenant, $($arg),*).await?;
        tx.commit().await?;
        Ok(done)
    }};
}

pub(crate) use tenant_writes;
