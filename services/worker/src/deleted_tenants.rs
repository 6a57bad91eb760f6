//! The store's answer to the sandbox reaper: which tenants were deleted, so their sandboxes
//! and workspaces go (`hermes_sandbox::sweep_deleted`).

use futures_util::future::BoxFuture;

use hermes_core::TenantId;
use hermes_store::Store;

/// Which tenants the store says were deleted here or are being deleted.
pub struct DeletedInStore(pub Store);

impl hermes_sandbox::DeletedTenants for DeletedInStore {
    fn deleted(&self) -> BoxFuture<'_, Result<Vec<TenantId>, String>> {
        Box::pin(async move { self.0.system().deleted_tenants().await.map_err(|e| e.to_string()) })
    }
}
