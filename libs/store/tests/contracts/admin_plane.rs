//! The admin plane's storage: links work once, sessions end when signed out or idle, a tenant
//! keeps an owner, a removed member's tokens die with the membership, one tenant's members,
//! invitations, tokens and audit entries are invisible to another, and the audit log is
//! append-only with secrets masked; a settled event can be sent again.

use std::time::Duration;

use hermes_core::{MemberRole, PersonId, TenantId};
use hermes_store::admin::{Acceptance, Acceptor, Actor, ActorKind, Audit, AuditFilter, Change};
use hermes_store::event_hooks::DeliveryStatus;
use hermes_store::{Store, StoreError};
use sqlx::PgPool;

use crate::common;

fn cli() -> Audit {
    Audit {
        actor: Actor { kind: ActorKind::Cli, id: "root".into(), label: "hermesctl".into() },
        request_id: None,
        source_address: None,
    }
}

fn person_audit(id: PersonId) -> Audit {
    Audit {
        actor: Actor { kind: ActorKind::Person, id: id.to_string(), label: "someone".into() },
        request_id: Some("req-1".into()),
        source_address: Some("10.0.0.9".into()),
    }
}

/// Records `count` entries in a new tenant (their object ids `0`, `1`, ...) and backdates the
/// first `aged` of them by `age`.
async fn aged_audit_entries(store: &Store, pool: &PgPool, count: u32, aged: u32, age: &str) {
    let acme = common::tenant(store, "acme").await;
    for i in 0..count {
        store.admin().record_audit(Some(acme.id), &cli(), Change::new("key.created", "api_key", i)).await.unwrap();
    }
    sqlx::query("UPDATE audit_log SET at = now() - $1::interval WHERE object_id::int < $2")
        .bind(age)
        .bind(i64::from(aged))
        .execute(pool)
        .await
        .unwrap();
}

async fn person(store: &Store, email: &str) -> PersonId {
    store.admin().ensure_person(email, "", false, &cli()).await.unwrap().id
}

/// A new person who is a member of `tenant` as `role`.
/// Tenant acme on `pool` with ann@acme.test its member as `role`.
async fn acme_and_ann(pool: &PgPool, role: MemberRole) -> (Store, common::Tenant, PersonId) {
    let store = common::store(pool);
    let acme = common::tenant(&store, "acme").await;
    let ann = member(&store, acme.id, "ann@acme.test", role).await;
    (store, acme, ann)
}

async fn member(store: &Store, tenant: TenantId, email: &str, role: MemberRole) -> PersonId {
    let id = person(store, email).await;
    store.admin().add_member(tenant, id, role, &cli()).await.unwrap();
    id
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_sign_in_link_works_once_and_a_session_ends_when_signed_out_or_idle(pool: PgPool) {
    let store = common::store(&pool);
    let ada = store.admin().ensure_person(" Ada@Example.COM ", "Ada", true, &cli()).await.unwrap();
    assert_eq!(ada.email, "ada@example.com", "emails are stored trimmed and lower-case");
    assert!(ada.operator);
    let again = store.admin().ensure_person("ada@example.com", "", false, &cli()).await.unwrap();
    assert_eq!(again.id, ada.id);
    assert!(again.operator, "ensuring a person never unmakes an operator");
    assert!(matches!(
        store.admin().ensure_person("not an email", "", false, &cli()).await,
        Err(StoreError::Invalid(_))
    ));

    let link = store.admin().create_sign_in_link(ada.id, Duration::from_secs(60)).await.unwrap();
    let (first, second) =
        tokio::join!(store.admin().redeem_sign_in_link(&link), store.admin().redeem_sign_in_link(&link));
    let redeemed: Vec<_> = [first.unwrap(), second.unwrap()].into_iter().flatten().collect();
    assert_eq!(redeemed, [ada.id], "two racing uses: exactly one signs in");
    assert_eq!(store.admin().redeem_sign_in_link("made-up").await.unwrap(), None);
    let stale = store.admin().create_sign_in_link(ada.id, Duration::from_secs(60)).await.unwrap();
    sqlx::query("UPDATE sign_in_links SET expires_at = now() - interval '1 second'").execute(&pool).await.unwrap();
    assert_eq!(store.admin().redeem_sign_in_link(&stale).await.unwrap(), None, "an expired link signs no one in");

    let idle = Duration::from_secs(1800);
    let live =
        store.admin().open_console_session(ada.id, None, Duration::from_secs(3600), "127.0.0.1", "test").await.unwrap();
    assert_eq!(store.admin().touch_console_session(live.id, idle).await.unwrap().map(|s| s.person), Some(ada.id));
    store.admin().end_console_session(live.id).await.unwrap();
    assert_eq!(store.admin().touch_console_session(live.id, idle).await.unwrap(), None, "signed out is out at once");

    let dozing = store.admin().open_console_session(ada.id, None, Duration::from_secs(3600), "", "").await.unwrap();
    sqlx::query("UPDATE console_sessions SET last_seen_at = now() - interval '31 minutes' WHERE id = $1")
        .bind(dozing.id.as_uuid())
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(store.admin().touch_console_session(dozing.id, idle).await.unwrap(), None, "idle past the timeout");

    let old = store.admin().open_console_session(ada.id, None, Duration::from_secs(1), "", "").await.unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(store.admin().touch_console_session(old.id, idle).await.unwrap(), None, "past its absolute end");
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn wrong_passwords_lock_an_account_and_a_right_one_starts_the_count_again(pool: PgPool) {
    let store = common::store(&pool);
    let bo = person(&store, "bo@example.com").await;
    let lock = Duration::from_secs(900);
    for _ in 0..2 {
        assert_eq!(store.admin().record_failed_sign_in(bo, 3, lock).await.unwrap(), None);
    }
    store.admin().record_sign_in(bo).await.unwrap();
    for _ in 0..2 {
        assert_eq!(store.admin().record_failed_sign_in(bo, 3, lock).await.unwrap(), None, "the count started again");
    }
    let until = store.admin().record_failed_sign_in(bo, 3, lock).await.unwrap().expect("the third in a row locks");
    assert!(until > chrono::Utc::now() + chrono::Duration::minutes(14));
    let record = store.admin().sign_in_record("BO@example.com").await.unwrap().unwrap();
    assert_eq!(record.locked_until, Some(until));
    assert!(record.password_hash.is_none());
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_tenant_keeps_an_owner_and_a_removed_members_tokens_stop_working(pool: PgPool) {
    let (store, acme, ann) = acme_and_ann(&pool, MemberRole::Owner).await;
    let ben = member(&store, acme.id, "ben@acme.test", MemberRole::Admin).await;

    let refused = store.admin().set_member_role(acme.id, ann, MemberRole::Admin, &person_audit(ann)).await;
    assert!(matches!(refused, Err(StoreError::Busy(_))), "the last owner cannot step down: {refused:?}");
    assert!(matches!(store.admin().remove_member(acme.id, ann, &cli()).await, Err(StoreError::Busy(_))));
    store.admin().set_member_role(acme.id, ben, MemberRole::Owner, &person_audit(ann)).await.unwrap();
    assert_eq!(
        store.admin().set_member_role(acme.id, ann, MemberRole::Member, &person_audit(ben)).await.unwrap(),
        MemberRole::Owner,
        "with a second owner the first may step down"
    );

    let (_, secret) = store
        .admin()
        .create_admin_token(acme.id, Some(ann), "ci", MemberRole::Owner, Duration::from_secs(3600), &person_audit(ann))
        .await
        .unwrap();
    let auth = store.admin().authenticate_admin_token(&secret).await.unwrap().expect("a fresh token works");
    assert_eq!(auth.tenant, Some(acme.id));
    assert_eq!(auth.role, MemberRole::Member, "a person's token is capped by the person's role now");
    store.admin().remove_member(acme.id, ann, &person_audit(ben)).await.unwrap();
    assert!(store.admin().authenticate_admin_token(&secret).await.unwrap().is_none(), "gone with the membership");

    let (service, secret) = store
        .admin()
        .create_admin_token(acme.id, None, "deploy", MemberRole::Admin, Duration::from_secs(3600), &person_audit(ben))
        .await
        .unwrap();
    assert_eq!(store.admin().authenticate_admin_token(&secret).await.unwrap().map(|a| a.role), Some(MemberRole::Admin));
    store.admin().revoke_admin_token(acme.id, service.id, &person_audit(ben)).await.unwrap();
    assert!(store.admin().authenticate_admin_token(&secret).await.unwrap().is_none(), "revoked at once");
    assert!(store.admin().authenticate_admin_token("hat_nothing_here").await.unwrap().is_none());
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn an_invitation_link_joins_once_and_another_tenant_sees_none_of_it(pool: PgPool) {
    let store = common::store(&pool);
    let (acme, other) = (common::tenant(&store, "acme").await, common::tenant(&store, "other").await);
    let owner = member(&store, acme.id, "owner@acme.test", MemberRole::Owner).await;

    let by = person_audit(owner);
    let (invite, token) = store
        .admin()
        .create_invitation(acme.id, "New@Acme.test", MemberRole::Member, Duration::from_secs(600), &by)
        .await
        .unwrap();
    assert_eq!(invite.email, "new@acme.test");
    let newt = Acceptor::NewAccount { display_name: "Newt", password_hash: None };
    let Acceptance::Joined { person: joined, tenant, role, new_account } =
        store.admin().accept_invitation(&token, newt, None, None).await.unwrap()
    else {
        panic!("a new address joins")
    };
    assert_eq!((tenant, role, joined.email.as_str()), (acme.id, MemberRole::Member, "new@acme.test"));
    assert!(new_account && !joined.email_proven, "an account made from a link is unproven");
    assert!(
        matches!(store.admin().accept_invitation(&token, newt, None, None).await.unwrap(), Acceptance::Invalid),
        "a link joins once"
    );
    let (revoked, token) = store
        .admin()
        .create_invitation(acme.id, "late@acme.test", MemberRole::Admin, Duration::from_secs(600), &by)
        .await
        .unwrap();
    store.admin().revoke_invitation(acme.id, revoked.id, &by).await.unwrap();
    let late = Acceptor::NewAccount { display_name: "", password_hash: None };
    let revoked_accept = store.admin().accept_invitation(&token, late, None, None).await.unwrap();
    assert!(matches!(revoked_accept, Acceptance::Invalid), "a revoked link joins no one");

    let members: Vec<String> =
        store.admin().members(acme.id).await.unwrap().into_iter().map(|m| m.person.email).collect();
    assert_eq!(members, ["new@acme.test", "owner@acme.test"]);
    assert!(store.admin().members(other.id).await.unwrap().is_empty(), "the other tenant sees no one of acme's");
    assert!(store.admin().invitations(other.id).await.unwrap().is_empty());
    assert!(matches!(store.admin().revoke_invitation(other.id, revoked.id, &cli()).await, Err(StoreError::NotFound)));
    assert!(matches!(store.admin().remove_member(other.id, owner, &cli()).await, Err(StoreError::NotFound)));
    assert_eq!(store.admin().member_role(other.id, owner).await.unwrap(), None);
    assert!(store.admin().tenant_for_person(owner, other.id.as_uuid()).await.is_err(), "not a member: not found");
    assert_eq!(
        store.admin().tenant_for_person(owner, acme.id.as_uuid()).await.unwrap(),
        (acme.id, Some(MemberRole::Owner))
    );
    let ops = store.admin().ensure_person("ops@example.com", "", true, &cli()).await.unwrap();
    assert_eq!(
        store.admin().tenant_for_person(ops.id, other.id.as_uuid()).await.unwrap(),
        (other.id, None),
        "operators reach every tenant"
    );

    let everything = AuditFilter { limit: 100, ..Default::default() };
    let entries = store.admin().audit_entries(acme.id, &everything).await.unwrap().entries;
    let actions: Vec<&str> = entries.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(
        actions,
        ["invitation.revoked", "invitation.created", "invitation.accepted", "invitation.created", "member.added"],
        "newest first"
    );
    assert_eq!(entries[1].source_address.as_deref(), Some("10.0.0.9"));
    assert!(store.admin().audit_entries(other.id, &everything).await.unwrap().entries.is_empty());
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn the_audit_log_pages_by_keyset_masks_secrets_and_cannot_be_rewritten(pool: PgPool) {
    let store = common::store(&pool);
    let acme = common::tenant(&store, "acme").await;
    for i in 0..5 {
        let change = Change::new("channel.updated", "channel", i)
            .before(serde_json::json!({"bot_token": "123:secret", "name": format!("bot {i}")}));
        store.admin().record_audit(Some(acme.id), &cli(), change).await.unwrap();
    }
    store.admin().record_audit(Some(acme.id), &cli(), Change::new("key.created", "api_key", "k")).await.unwrap();
    let mut filter = AuditFilter { action: Some("channel.".into()), limit: 2, ..Default::default() };
    let mut seen = Vec::new();
    loop {
        let page = store.admin().audit_entries(acme.id, &filter).await.unwrap();
        seen.extend(page.entries.iter().map(|e| e.object_id.clone()));
        match page.next {
            Some(next) => filter.before_id = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, ["4", "3", "2", "1", "0"], "every channel entry once, newest first, across pages");
    let one = store
        .admin()
        .audit_entries(acme.id, &AuditFilter { object_id: Some("3".into()), limit: 10, ..Default::default() })
        .await
        .unwrap();
    assert_eq!(one.entries[0].before.as_ref().unwrap()["bot_token"], "[masked]");
    assert_eq!(one.entries[0].before.as_ref().unwrap()["name"], "bot 3");

    for sql in ["UPDATE audit_log SET action = 'nothing'", "DELETE FROM audit_log"] {
        for role in ["hermes_tenant", "hermes_system"] {
            let mut tx = pool.begin().await.unwrap();
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!("SET LOCAL ROLE {role}"))).execute(&mut *tx).await.unwrap();
            let refused = sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut *tx).await.unwrap_err();
            assert!(refused.to_string().contains("permission denied"), "{role}: {sql}: {refused}");
        }
    }
    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log").fetch_one(&pool).await.unwrap();
    assert_eq!(kept, 6);
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn retention_deletes_only_audit_entries_past_their_age_oldest_first(pool: PgPool) {
    let store = common::store(&pool);
    aged_audit_entries(&store, &pool, 5, 3, "400 days").await;
    assert_eq!(store.system().prune_audit(365, 2).await.unwrap(), 2, "a batch at a time");
    assert_eq!(store.system().prune_audit(365, 2).await.unwrap(), 1);
    assert_eq!(store.system().prune_audit(365, 2).await.unwrap(), 0);
    let left: Vec<String> =
        sqlx::query_scalar("SELECT object_id FROM audit_log ORDER BY id").fetch_all(&pool).await.unwrap();
    assert_eq!(left, ["3", "4"], "the recent entries stay");
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_settled_event_is_sent_again_from_its_first_attempt_and_one_on_its_way_is_not(pool: PgPool) {
    use hermes_store::event_hooks::Attempt;
    let store = common::store(&pool);
    let secrets = common::secrets();
    let t = common::tenant(&store, "acme").await;
    let events = ["turn.finished".to_owned()];
    let hook =
        store.automation().create_event_hook(t.id, "https://hooks.example.com/x", &events, "", Some(&secrets)).await;
    let hook = hook.unwrap().0.id;
    let event = store.automation().ping_event_hook(t.id, hook).await.unwrap();
    let busy = store.automation().resend_event(t.id, hook, event).await;
    assert!(matches!(busy, Err(StoreError::Busy(_))), "still on its way: {busy:?}");

    let claimed = store.system().claim_events(10, Duration::from_secs(30)).await.unwrap();
    assert_eq!(claimed.len(), 1);
    let failed = Attempt::Failed { status: Some(410), error: "gone".into() };
    store.system().settle_event(&claimed[0], &failed).await.unwrap();
    store.automation().resend_event(t.id, hook, event).await.unwrap();
    let shown = &store.automation().event_deliveries(t.id, hook, 10).await.unwrap()[0];
    assert_eq!((shown.status, shown.attempts), (DeliveryStatus::Pending, 0), "{shown:?}");
    assert!(shown.last_error.is_none(), "{shown:?}");
    let again = store.system().claim_events(10, Duration::from_secs(30)).await.unwrap();
    assert_eq!((again.len(), again[0].id, again[0].attempts), (1, event, 1), "due now, the same event");
    let missing = store.automation().resend_event(t.id, hook, hermes_core::EventDeliveryId::new()).await;
    assert!(matches!(missing, Err(StoreError::NotFound)), "{missing:?}");
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_domain_signs_in_through_one_tenants_provider_whose_secret_stays_sealed(pool: PgPool) {
    use hermes_store::admin::SsoSettings;
    let store = common::store(&pool);
    let secrets = common::secrets();
    let (a, b) = (common::tenant(&store, "acme").await, common::tenant(&store, "globex").await);
    let settings = SsoSettings {
        issuer: "https://login.acme.test".into(),
        client_id: "hermes".into(),
        client_secret: Some("s3cret".into()),
        scopes: "openid email".into(),
        email_domains: vec!["acme.test".into()],
        join_as: Some(MemberRole::Member),
        trust_unverified_email: false,
    };
    let shown = store.admin().set_tenant_sso(a.id, &settings, Some(&secrets), &cli()).await.unwrap();
    assert!(shown.has_client_secret);
    let stored: Vec<u8> =
        sqlx::query_scalar("SELECT client_secret FROM tenant_identity_providers").fetch_one(&pool).await.unwrap();
    assert!(!String::from_utf8_lossy(&stored).contains("s3cret"), "sealed at rest");
    let taken = store.admin().set_tenant_sso(b.id, &settings, Some(&secrets), &cli()).await;
    assert!(matches!(taken, Err(StoreError::Conflict(_))), "{taken:?}");
    assert!(matches!(store.admin().tenant_sso(b.id).await, Err(StoreError::NotFound)), "nothing of it for globex");

    let found = store.admin().sso_for_domain("acme.test", Some(&secrets)).await.unwrap().expect("acme's provider");
    assert_eq!((found.tenant, found.client_secret.as_deref()), (a.id, Some("s3cret")));
    assert!(store.admin().sso_for_domain("globex.test", Some(&secrets)).await.unwrap().is_none());
    // Keeping the secret when none is given; the domain moves once acme lets it go.
    let keep = SsoSettings { client_secret: None, email_domains: vec!["acme.dev".into()], ..settings.clone() };
    store.admin().set_tenant_sso(a.id, &keep, Some(&secrets), &cli()).await.unwrap();
    let found = store.admin().sso_provider(a.id, Some(&secrets)).await.unwrap().unwrap();
    assert_eq!((found.client_secret.as_deref(), found.email_domains), (Some("s3cret"), vec!["acme.dev".to_owned()]));
    store.admin().set_tenant_sso(b.id, &settings, Some(&secrets), &cli()).await.unwrap();
    assert!(store.admin().delete_tenant_sso(a.id, &cli()).await.unwrap());
    assert!(!store.admin().delete_tenant_sso(a.id, &cli()).await.unwrap());
    let filter = AuditFilter { action: Some("sso.".into()), limit: 10, ..Default::default() };
    let actions: Vec<String> =
        store.admin().audit_entries(a.id, &filter).await.unwrap().entries.into_iter().map(|e| e.action).collect();
    assert_eq!(actions, ["sso.removed", "sso.configured", "sso.configured"]);
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_tenants_web_quotas_default_to_the_installations_and_are_its_own(pool: PgPool) {
    let store = common::store(&pool);
    let acme = store.tenancy().create_tenant("acme").await.unwrap().id;
    let other = store.tenancy().create_tenant("other").await.unwrap().id;
    assert_eq!(
        store.tenancy().web_quotas(acme).await.unwrap(),
        hermes_store::WebQuotas::default(),
        "None: the default"
    );
    let set = hermes_store::WebQuotas { searches_per_day: Some(50), extracts_per_day: Some(0) };
    store.tenancy().set_web_quotas(acme, set).await.unwrap();
    assert_eq!(store.tenancy().web_quotas(acme).await.unwrap(), set, "0 (unlimited) is kept apart from None");
    assert_eq!(store.tenancy().web_quotas(other).await.unwrap(), hermes_store::WebQuotas::default(), "per tenant");
}

/// The security review of 2026-12 (L9): a new password shuts out whoever knew the old one,
/// tokens included; a removed member's own tokens and the service tokens they made (they saw
/// the secrets) stop working; other people's service tokens go on.
#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_new_password_or_a_removal_ends_the_tokens_a_person_held_or_made(pool: PgPool) {
    let (store, acme, ann) = acme_and_ann(&pool, MemberRole::Admin).await;
    let olive = member(&store, acme.id, "olive@acme.test", MemberRole::Owner).await;
    let day = Duration::from_secs(86_400);
    let make = async |person: Option<PersonId>, by: PersonId| {
        store
            .admin()
            .create_admin_token(acme.id, person, "t", MemberRole::Admin, day, &person_audit(by))
            .await
            .unwrap()
            .1
    };
    let works = async |secret: &str| store.admin().authenticate_admin_token(secret).await.unwrap().is_some();
    let (anns, anns_service, olives_service) =
        (make(Some(ann), ann).await, make(None, ann).await, make(None, olive).await);

    store.admin().set_password_hash(ann, "$argon2id$new", None, &cli()).await.unwrap();
    assert!(!works(&anns).await, "a new password ends the person's tokens");
    assert!(works(&anns_service).await, "a service token is the tenant's");

    store.admin().remove_member(acme.id, ann, &person_audit(olive)).await.unwrap();
    assert!(!works(&anns_service).await, "the service token ann made goes with her");
    assert!(works(&olives_service).await, "olive's stays");
}

/// The security review of 2026-12 (L10): the retention floor is the database's.
#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn audit_retention_keeps_a_day_whatever_the_caller_asks(pool: PgPool) {
    let store = common::store(&pool);
    aged_audit_entries(&store, &pool, 3, 1, "2 days").await;
    let mut tx = pool.begin().await.unwrap();
    sqlx::raw_sql("SET LOCAL ROLE hermes_system").execute(&mut *tx).await.unwrap();
    let gone: i64 =
        sqlx::query_scalar("SELECT hermes_prune_audit('0 seconds', 1000)").fetch_one(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(gone, 1, "only the entry older than a day");
}
