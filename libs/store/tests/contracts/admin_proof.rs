//! Who an invitation or a provider may sign in as (security review 2026-12, H1 and M3): a link
//! never joins an existing account unless its owner is signed in, never reaches an operator,
//! never sets an existing password; an account made from a link is unproven, and what was set
//! on it is dropped when its address is proven or a membership is granted to it; an identity
//! at a provider is bound to one person.

use std::time::Duration;

use hermes_core::MemberRole;
use hermes_store::StoreError;
use hermes_store::admin::{Acceptance, Acceptor, Actor, ActorKind, Audit, AuditFilter, IdentityBinding};
use sqlx::PgPool;

use crate::common;

fn cli() -> Audit {
    Audit {
        actor: Actor { kind: ActorKind::Cli, id: "root".into(), label: "hermesctl".into() },
        request_id: None,
        source_address: Some("10.0.0.7".into()),
    }
}

const WEEK: Duration = Duration::from_secs(7 * 86_400);

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_link_to_an_existing_address_joins_only_its_signed_in_owner(pool: PgPool) {
    let store = common::store(&pool);
    let (acme, umbrella) = (common::tenant(&store, "acme").await, common::tenant(&store, "umbrella").await);
    let boss = store.admin().ensure_person("boss@umbrella.test", "", false, &cli()).await.unwrap();
    store.admin().add_member(umbrella.id, boss.id, MemberRole::Owner, &cli()).await.unwrap();
    let mallory = store.admin().ensure_person("mallory@acme.test", "", false, &cli()).await.unwrap();

    let (_, token) =
        store.admin().create_invitation(acme.id, "Boss@Umbrella.test", MemberRole::Member, WEEK, &cli()).await.unwrap();
    let stranger = Acceptor::NewAccount { display_name: "x", password_hash: Some("$argon2id$attacker") };
    let first = store.admin().accept_invitation(&token, stranger, None, None).await.unwrap();
    assert!(matches!(&first, Acceptance::SignInFirst { email } if email == "boss@umbrella.test"), "{first:?}");
    let wrong = store.admin().accept_invitation(&token, Acceptor::SignedIn(mallory.id), None, None).await.unwrap();
    assert!(matches!(wrong, Acceptance::NotYours), "another signed-in person cannot take it: {wrong:?}");
    let record = store.admin().sign_in_record("boss@umbrella.test").await.unwrap().unwrap();
    assert_eq!(record.password_hash, None, "the link set no password on the existing account");
    assert_eq!(store.admin().member_role(acme.id, boss.id).await.unwrap(), None, "nobody joined yet");

    // The owner of the address, signed in, accepts: the link was not spent by the refusals.
    let Acceptance::Joined { person, tenant, role, new_account } = store
        .admin()
        .accept_invitation(&token, Acceptor::SignedIn(boss.id), None, Some("10.0.0.7".into()))
        .await
        .unwrap()
    else {
        panic!("the signed-in owner joins")
    };
    assert_eq!((person.id, tenant, role, new_account), (boss.id, acme.id, MemberRole::Member, false));
    // Recorded in the tenant's log and the installation's.
    let tenant_log = store.admin().audit_entries(acme.id, &AuditFilter::default()).await.unwrap();
    let installation_log = store.admin().installation_audit_entries(&AuditFilter::default()).await.unwrap();
    for log in [tenant_log, installation_log] {
        let entry = log.entries.iter().find(|e| e.action == "invitation.accepted").expect("an entry");
        assert_eq!(
            (entry.actor.label.as_str(), entry.source_address.as_deref()),
            ("boss@umbrella.test", Some("10.0.0.7"))
        );
    }
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn an_operators_address_is_never_invited_nor_joined_by_a_link(pool: PgPool) {
    let store = common::store(&pool);
    let acme = common::tenant(&store, "acme").await;
    store.admin().ensure_person("root@ops.test", "", true, &cli()).await.unwrap();
    let refused = store.admin().create_invitation(acme.id, "ROOT@ops.test", MemberRole::Member, WEEK, &cli()).await;
    assert!(matches!(refused, Err(StoreError::Invalid(_))), "{refused:?}");

    // Invited before becoming an operator: the link then joins nobody.
    let (_, token) =
        store.admin().create_invitation(acme.id, "later@ops.test", MemberRole::Member, WEEK, &cli()).await.unwrap();
    let later = store.admin().ensure_person("later@ops.test", "", true, &cli()).await.unwrap();
    let signed_in = store.admin().accept_invitation(&token, Acceptor::SignedIn(later.id), None, None).await.unwrap();
    assert!(matches!(signed_in, Acceptance::Invalid), "{signed_in:?}");
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_pre_claimed_address_loses_its_claimers_password_when_granted_or_proven(pool: PgPool) {
    let store = common::store(&pool);
    let (acme, bigco) = (common::tenant(&store, "acme").await, common::tenant(&store, "bigco").await);
    // Mallory, an admin of acme, invites a stranger's address and accepts it herself.
    let (_, token) =
        store.admin().create_invitation(acme.id, "ceo@bigco.test", MemberRole::Member, WEEK, &cli()).await.unwrap();
    let claim = Acceptor::NewAccount { display_name: "CEO", password_hash: Some("$argon2id$mallorys") };
    let Acceptance::Joined { person: claimed, .. } =
        store.admin().accept_invitation(&token, claim, None, None).await.unwrap()
    else {
        panic!("a new address joins")
    };
    assert!(claimed.has_password && !claimed.email_proven);
    let session = store.admin().open_console_session(claimed.id, None, Duration::from_secs(600), "", "").await.unwrap();

    // An operator makes the address an owner of bigco: Mallory's password and session go.
    store.admin().add_member(bigco.id, claimed.id, MemberRole::Owner, &cli()).await.unwrap();
    let after = store.admin().sign_in_record("ceo@bigco.test").await.unwrap().unwrap();
    assert_eq!(after.password_hash, None, "the claimer's password does not reach bigco");
    assert!(store.admin().touch_console_session(session.id, Duration::from_secs(600)).await.unwrap().is_none());
    assert!(!after.person.email_proven, "granting is not proving");

    // The real owner signs in by the operator's link (or a verified provider): proven.
    assert!(store.admin().prove_email(claimed.id, "sign-in link", &cli()).await.unwrap());
    assert!(store.admin().person(claimed.id).await.unwrap().email_proven);
    assert!(!store.admin().prove_email(claimed.id, "sign-in link", &cli()).await.unwrap(), "once");
    // A proven account keeps its credentials when granted more.
    let made = store.admin().ensure_person("ann@bigco.test", "", false, &cli()).await.unwrap();
    assert!(made.email_proven, "an operator's account is proven");
    assert!(!store.admin().drop_unproven_credentials(made.id, "test", &cli()).await.unwrap());
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn an_identity_at_a_provider_signs_in_one_person(pool: PgPool) {
    let store = common::store(&pool);
    let ann = store.admin().ensure_person("ann@acme.test", "", false, &cli()).await.unwrap();
    let bob = store.admin().ensure_person("bob@acme.test", "", false, &cli()).await.unwrap();
    let idp = "https://idp.acme.test";
    assert_eq!(store.admin().bind_identity(ann.id, idp, "sub-ann").await.unwrap(), IdentityBinding::New);
    assert_eq!(store.admin().bind_identity(ann.id, idp, "sub-ann").await.unwrap(), IdentityBinding::Known);
    assert_eq!(
        store.admin().bind_identity(ann.id, idp, "sub-other").await.unwrap(),
        IdentityBinding::Mismatch,
        "reassigned"
    );
    assert_eq!(
        store.admin().bind_identity(bob.id, idp, "sub-ann").await.unwrap(),
        IdentityBinding::Mismatch,
        "someone else's"
    );
    assert_eq!(store.admin().bind_identity(ann.id, "https://other.test", "sub-x").await.unwrap(), IdentityBinding::New);
}
