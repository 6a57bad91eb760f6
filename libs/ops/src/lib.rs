//! The admin use cases that more than one front end runs. The admin API's handlers and
//! `hermesctl`'s direct mode call the same function here, which checks the input, makes the
//! change through an audited transaction and records who made it with it: the same rules and
//! the same audit entry whichever door the operator came in by. The functions take the store,
//! the actor ([`Audit`]) and the tenant (with the caller's standing where the role decides, as
//! for [`members`]), and speak `hermes_wire` types.
//!
//! What only one front end does (a console's sign-in, the CLI's migrations) stays with it.

pub mod agents;
pub mod channels;
pub mod cron;
mod error;
pub mod keys;
pub mod mcp;
pub mod members;
pub mod secrets;
pub mod tenant_data;
pub mod tenants;
pub mod toolsets;

pub use error::{OpsError, Result};
pub use hermes_store::admin::Audit;

use hermes_core::access::{AdminOp, Standing, allows};
use hermes_core::{AgentId, TenantId};
use hermes_store::Store;

/// The agent `reference` names in `tenant`: its id, or else its name.
pub async fn agent(store: &Store, tenant: TenantId, reference: &str) -> Result<hermes_store::Agent> {
    let found = match reference.parse::<AgentId>() {
        Ok(id) => store.agents().agent(tenant, id).await,
        Err(_) => store.agents().agent_by_name(tenant, reference).await,
    };
    found.map_err(|e| OpsError::missing(e, hermes_core::ErrorCode::NotFound, "agent"))
}

/// `Forbidden` unless a caller standing so may perform `op` (`hermes_core::access::allows`).
pub fn check(standing: Standing, op: AdminOp) -> Result<()> {
    if allows(standing, op) { Ok(()) } else { Err(OpsError::Forbidden { standing, op }) }
}
