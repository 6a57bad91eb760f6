//! The store's rows as the admin API shows them (`hermes_wire` types): the one place where a
//! column becomes a field, so a row type can change without the API changing with it.

use hermes_wire::admin::{
    Agent, AuditActor, AuditEntry, Invitation, ListedSession, Member, Membership, ModelRef, OpenTurn, Person,
    WaitingQuestion,
};

pub(crate) fn person(p: hermes_store::admin::Person) -> Person {
    Person {
        id: p.id,
        email: p.email,
        display_name: p.display_name,
        operator: p.operator,
        has_password: p.has_password,
        email_proven: p.email_proven,
        operator_sso: p.operator_sso,
        disabled: p.disabled,
        created_at: p.created_at,
    }
}

pub(crate) fn member(m: hermes_store::admin::Member) -> Member {
    Member { person: person(m.person), role: m.role, member_since: m.member_since }
}

pub(crate) fn membership(m: hermes_store::admin::Membership) -> Membership {
    Membership { tenant_id: m.tenant_id, tenant_name: m.tenant_name, role: m.role }
}

pub(crate) fn invitation(i: hermes_store::admin::Invitation) -> Invitation {
    Invitation {
        id: i.id,
        email: i.email,
        role: i.role,
        expires_at: i.expires_at,
        accepted_at: i.accepted_at,
        revoked_at: i.revoked_at,
        created_at: i.created_at,
    }
}

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
