//! Whom a checked ID token signs in (security review 2026-12, M3 and L1):
//! - the email must be verified (`email_verified: true`), unless the provider is explicitly
//!   trusted without it (`trust_unverified_email`);
//! - the person's identity at the provider (`iss`, `sub`) is bound at the first sign-in, and
//!   a token with the same email but another subject (a reassigned address), or a subject
//!   already bound to someone else, is refused;
//! - the installation's provider signs in existing people, never one whose email domain a
//!   tenant's own provider serves, and an operator only if they opted in (`operator_sso`);
//! - a tenant's provider signs in people at its domains, never an operator, lets a newcomer
//!   join when the tenant says so, and its session is valid in that tenant only;
//! - the sign-in proves the address: an unproven account (made from an invitation link) loses
//!   what was set on it before.

use hermes_store::admin::{Actor, ActorKind, Audit, IdentityBinding, Person, SsoProvider};

use crate::admin::caller::RequestMeta;
use crate::admin::oidc_client::Failure;
use crate::admin::state::AdminState;

/// The lower-case domain of an email address, if it is one: it picks a tenant's own provider,
/// and bounds whom that provider signs in.
pub(crate) fn domain_of(email: &str) -> Option<String> {
    let (local, domain) = email.trim().rsplit_once('@')?;
    let domain = domain.to_ascii_lowercase();
    (!local.is_empty() && domain.contains('.') && !domain.starts_with('.')).then_some(domain)
}

/// What a checked ID token says about its person.
#[derive(Debug)]
pub(crate) struct Asserted<'a> {
    pub issuer: &'a str,
    pub subject: &'a str,
    pub email: &'a str,
    pub email_verified: Option<bool>,
    pub name: Option<&'a str>,
}

fn by_provider(issuer: &str, meta: &RequestMeta) -> Audit {
    Audit {
        actor: Actor { kind: ActorKind::System, id: "sso".into(), label: format!("single sign-on ({issuer})") },
        request_id: meta.request_id.clone(),
        source_address: meta.source_address.clone(),
    }
}

/// The person the installation's provider signs in.
pub(crate) async fn installation_person(state: &AdminState, token: &Asserted<'_>) -> Result<Person, Failure> {
    if token.email_verified != Some(true) && !state.config.admin.oidc.trust_unverified_email {
        return Err(Failure::Unverified);
    }
    let domain = domain_of(token.email).ok_or(Failure::NoAccount)?;
    // A domain a tenant's own provider serves signs in through that provider alone.
    if state.store.admin().domain_has_own_provider(&domain).await.map_err(|_| Failure::Provider)? {
        return Err(Failure::TeamProvider);
    }
    let person = match state.store.admin().sign_in_record(token.email).await.map_err(|_| Failure::Provider)? {
        Some(r) if !r.person.disabled => r.person,
        _ => return Err(Failure::NoAccount),
    };
    if person.operator && !person.operator_sso {
        return Err(Failure::Operator);
    }
    Ok(person)
}

/// The person a tenant's provider signs in: at one of its domains, never an operator; one new
/// to the tenant is made (and joins, in [`vouch`]) when the tenant lets its domains join.
pub(crate) async fn tenant_person(
    state: &AdminState,
    meta: &RequestMeta,
    provider: &SsoProvider,
    token: &Asserted<'_>,
) -> Result<Person, Failure> {
    if token.email_verified != Some(true) && !provider.trust_unverified_email {
        return Err(Failure::Unverified);
    }
    let domain = domain_of(token.email).ok_or(Failure::WrongDomain)?;
    if !provider.email_domains.contains(&domain) {
        return Err(Failure::WrongDomain);
    }
    match state.store.admin().sign_in_record(token.email).await.map_err(|_| Failure::Provider)? {
        Some(r) if r.person.disabled => Err(Failure::NoAccount),
        Some(r) if r.person.operator => Err(Failure::Operator),
        Some(r) => Ok(r.person),
        None if provider.join_as.is_some() => {
            let audit = by_provider(&provider.issuer, meta);
            let made =
                state.store.admin().ensure_person(token.email, token.name.unwrap_or_default(), false, &audit).await;
            made.map_err(|_| Failure::Provider)
        }
        None => Err(Failure::NoAccount),
    }
}

/// What the provider vouches for, once the person is found: their identity there is bound (or
/// must match its binding), their address is proven, and a tenant's provider lets them in.
pub(crate) async fn vouch(
    state: &AdminState,
    meta: &RequestMeta,
    person: Person,
    token: &Asserted<'_>,
    provider: Option<&SsoProvider>,
) -> Result<Person, Failure> {
    let bound = state.store.admin().bind_identity(person.id, token.issuer, token.subject).await;
    if bound.map_err(|_| Failure::Provider)? == IdentityBinding::Mismatch {
        tracing::warn!(person = %person.id, issuer = token.issuer, "an ID token's subject does not match the account's");
        return Err(Failure::Identity);
    }
    let audit = by_provider(token.issuer, meta);
    let proven = state.store.admin().prove_email(person.id, "a verified email at an identity provider", &audit).await;
    let person = match proven.map_err(|_| Failure::Provider)? {
        true => state.store.admin().person(person.id).await.map_err(|_| Failure::Provider)?,
        false => person,
    };
    let Some(provider) = provider else { return Ok(person) };
    let role = state.store.admin().member_role(provider.tenant, person.id).await.map_err(|_| Failure::Provider)?;
    match (role, provider.join_as) {
        (Some(_), _) => {}
        (None, Some(join_as)) => {
            let joined = state.store.admin().add_member(provider.tenant, person.id, join_as, &audit).await;
            joined.map_err(|_| Failure::Provider)?;
        }
        (None, None) => return Err(Failure::NoAccount),
    }
    Ok(person)
}
