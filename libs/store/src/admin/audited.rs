//! An admin change and its audit entry in one transaction. A handler opens an [`AuditedTx`]
//! (in a tenant, or the installation's), makes its writes through it (the same writes the
//! [`Store`] offers, each in its own module) and ends it with [`AuditedTx::commit`], which
//! records the entry in that transaction: the change and its entry commit together or not at
//! all, and dropping the transaction (an error, a refusal) rolls everything back.
//!
//! The [`Store`]'s own methods stay unaudited for the callers that must not audit (the worker,
//! the tenant API, `hermesctl`, which records its own `cli.command` entry).

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
        Ok(AuditedTx { tx: self.system().begin().await?, scope: Installation, by })
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
