//! An agent's secret bindings (issue 39): a variable of its sandboxes that holds a placeholder,
//! which the egress proxy swaps for one of the team's keys on requests to that key's hosts.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use hermes_core::secret_placement::SecretPlacement;

/// What `PUT .../secrets/{NAME}` binds the variable to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretBind {
    /// The team's credential (its pool name, as `hermesctl credential add --provider` named it).
    pub credential: String,
    /// Where else than headers the value may go: `query`, `body_field`; and `required_header`,
    /// a header that must carry this secret's placeholder on requests to its hosts.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub placement: SecretPlacement,
}

/// A binding as shown: never a value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SecretBinding {
    /// The variable's name in the agent's sandboxes.
    pub name: String,
    pub credential: String,
    #[schema(value_type = Object)]
    pub placement: SecretPlacement,
    /// Whether the credential has a key now (else the variable's placeholder goes nowhere).
    pub has_key: bool,
    /// The hosts the key may go to (its first key's).
    pub hosts: Vec<String>,
    pub created_at: DateTime<Utc>,
}
