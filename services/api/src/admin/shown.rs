//! The store's rows as the admin API shows them (`hermes_wire` types): the one place where a
//! column becomes a field, so a row type can change without the API changing with it.

use hermes_wire::admin::{Agent, ListedSession};

pub(crate) fn listed_session(s: hermes_store::ListedSession) -> ListedSession {
    ListedSession { session: s.info, match_seq: s.match_seq, snippet: s.snippet }
}

pub(crate) fn agent(a: hermes_store::Agent) -> Agent {
    Agent {
        id: a.id,
        tenant_id: a.tenant_id,
        name: a.name,
        model: a.model,
        provider_base_url: a.provider_base_url,
        has_provider_key: a.has_provider_key,
        soul: a.soul,
        system_message: a.system_message,
        toolsets: a.toolsets,
        provider_key_hosts: a.provider_key_hosts,
        fallbacks: a.fallbacks,
        api_mode: a.api_mode,
        auxiliary: a.auxiliary,
        context_window: a.context_window,
        approval_mode: a.approval_mode,
        egress: a.egress,
        disabled_skills: a.disabled_skills,
        image_input_mode: a.image_input_mode,
        vision_model: a.vision_model,
        created_at: a.created_at,
    }
}
