//! The store's rows as `/v1` and `/api` show them (`hermes_wire` types): the one place where a
//! column becomes a field, so a row type can change without the API changing with it.

use hermes_wire::v1::{CronJob, NumberedMessage};

/// A stored job as the API shows it: without its tenant.
pub(crate) fn cron_job(j: hermes_store::cron::Job) -> CronJob {
    j.job
}

/// A webhook trigger without its secret (the `/v1` view and the console's list).
pub(crate) fn hook_trigger(h: &hermes_store::webhooks::Webhook) -> hermes_wire::v1::HookTrigger {
    hermes_wire::v1::HookTrigger {
        id: h.id,
        agent_id: h.agent_id,
        name: h.name.clone(),
        events: h.events.clone(),
        prompt: h.prompt.clone(),
        skills: h.skills.clone(),
        deliver: h.deliver.clone(),
        cron_job_id: h.cron_job_id,
        enabled: h.enabled,
        rate_limit_per_minute: h.rate_limit_per_minute,
        last_received_at: h.last_received_at,
        created_at: h.created_at,
    }
}

/// An event endpoint without its secret (the `/v1` view and the console's list).
pub(crate) fn event_endpoint(h: &hermes_store::event_hooks::EventHook) -> hermes_wire::v1::EventEndpoint {
    hermes_wire::v1::EventEndpoint {
        id: h.id,
        url: h.url.clone(),
        events: h.events.clone(),
        description: h.description.clone(),
        enabled: h.enabled,
        last_delivery_at: h.last_delivery_at,
        last_status: h.last_status,
        last_error: h.last_error.clone(),
        created_at: h.created_at,
    }
}

/// A stored message as a transcript shows it.
pub(crate) fn numbered(m: hermes_store::StoredMessage) -> NumberedMessage {
    NumberedMessage { message: m.message, seq: m.seq }
}
