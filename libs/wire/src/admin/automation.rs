//! A tenant's webhook triggers and event endpoints as the console lists them (secrets never;
//! creating and editing them is `/v1/webhooks` and `/v1/event-hooks`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::v1::{EventEndpoint, HookTrigger};

/// A tenant's webhook triggers and event endpoints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Hooks {
    pub webhooks: Vec<HookTrigger>,
    pub event_hooks: Vec<EventEndpoint>,
}
