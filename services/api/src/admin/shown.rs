//! The store's rows as the admin API shows them (`hermes_wire` types): the one place where a
//! column becomes a field, so a row type can change without the API changing with it.

use hermes_wire::admin::{Agent, AuditActor, AuditEntry, ListedSession, ModelRef, OpenTurn, WaitingQuestion};

pub(crate) fn audit_entry(e: hermes_store::admin::AuditEntry) -> AuditEntry {
    AuditEntry {
        id: e.id,
        tenant_id: e.tenant_id,
        at: e.at,
        actor: AuditActor { kind: e.actor.kind.as_str().to_owned(), id: e.actor.id, label: e.actor.label },
        action: e.action,
        object_kind: e.object_kind,
        object_id: e.object_id,
        before: e.before,
        after: e.after,
        request_id: e.request_id,
        source_address: e.source_address,
    }
}

pub(crate) fn listed_session(s: hermes_store::ListedSession) -> ListedSession {
    ListedSession { session: crate::shown::session(s.info), match_seq: s.match_seq, snippet: s.snippet }
}

pub(crate) fn open_turn(t: hermes_store::admin::OpenTurn) -> OpenTurn {
    OpenTurn {
        id: t.id,
        session_id: t.session_id,
        agent: t.agent,
        status: t.status,
        stopping: t.stopping,
        input: t.input,
        created_at: t.created_at,
        started_at: t.started_at,
    }
}

pub(crate) fn waiting_question(w: hermes_store::admin::WaitingInteraction) -> WaitingQuestion {
    WaitingQuestion {
        id: w.id,
        turn_id: w.turn_id,
        session_id: w.session_id,
        agent: w.agent,
        kind: w.kind,
        prompt: w.prompt,
        created_at: w.created_at,
        expires_at: w.expires_at,
    }
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
        fallbacks: a.fallbacks.into_iter().map(model_ref).collect(),
        api_mode: a.api_mode,
        auxiliary: a.auxiliary.map(model_ref),
        context_window: a.context_window,
        approval_mode: a.approval_mode,
        egress: a.egress,
        disabled_skills: a.disabled_skills,
        image_input_mode: a.image_input_mode,
        vision_model: a.vision_model.map(model_ref),
        created_at: a.created_at,
    }
}

fn model_ref(m: hermes_store::FallbackModel) -> ModelRef {
    ModelRef { base_url: m.base_url, model: m.model, api_mode: m.api_mode }
}
