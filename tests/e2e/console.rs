//! The console in a real browser: Chromium driven by Playwright (`tests/console/console.mjs`)
//! against the real service with the scripted model. This side arranges the world (tenants,
//! people, a session whose transcript carries XSS payloads, an expired session) and hands it
//! to the script; the script signs in with a link, with a password and through a scripted
//! OpenID Connect provider, browses every page in
//! English and Chinese (screenshots kept in `target/tmp/console-screenshots`), invites
//! someone who joins from the link, checks a member gets no controls and the API refuses
//! them, that another tenant's URL finds nothing, that a forged cross-site POST and an
//! expired session are refused, and that the payloads stay inert. A shorter walk runs in
//! Firefox ESR over WebDriver BiDi (`tests/firefox/console.mjs`).

use std::process::Command;

use hermes_core::{MemberRole, PersonId, TenantId};
use hermes_testkit::ScriptedReply;
use serde_json::{Value, json};

use crate::admin::{by_link, cli};
use crate::harness::TestEnv;

/// The bot the console binds, on the Telegram emulator.
const BOT_TOKEN: &str = "777:console-bot";

/// XSS payloads a transcript may hold: each must show as text and do nothing.
const PAYLOADS: &str = "<script>window.__pwned = 'script'</script> \
    <img src=x onerror=\"window.__pwned = 'img'\"> [click me](javascript:window.__pwned='link') \
    <a href=\"javascript:window.__pwned='anchor'\">anchor</a>";

/// The browser at `$var`, else at `default`, if it is there.
fn browser(var: &str, default: &str) -> Option<String> {
    let path = std::env::var(var).unwrap_or_else(|_| default.into());
    std::path::Path::new(&path).exists().then_some(path)
}

/// Team acme with a conversation whose question and answer carry [`PAYLOADS`], and its owner
/// Olive.
async fn acme_showing_payloads(env: &TestEnv) -> (TenantId, PersonId) {
    let (acme, _, key) = env.tenant("acme", "helper").await;
    env.llm.push(ScriptedReply::text(format!("Here you go: {PAYLOADS}")));
    let resp = env.chat(&key, json!({"messages": [{"role": "user", "content": format!("Show me {PAYLOADS}")}]})).await;
    assert_eq!(resp.status(), 200);
    let owner = env.store.admin().ensure_person("owner@acme.test", "Olive Owner", false, &cli()).await.unwrap();
    env.store.admin().add_member(acme, owner.id, MemberRole::Owner, &cli()).await.unwrap();
    (acme, owner.id)
}

/// Runs a walk (`node console.mjs` in `root`) with `world` in `$WORLD` and `vars` set; whether
/// it exited well, and its stdout and stderr.
async fn walk(root: &'static str, world: Value, vars: Vec<(&'static str, String)>) -> (bool, String, String) {
    let out = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg("console.mjs")
            .current_dir(root)
            .env("WORLD", world.to_string())
            .envs(vars)
            .output()
            .expect("node runs")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.success(), stdout, stderr)
}

#[tokio::test]
async fn the_console_works_in_a_real_browser_in_both_languages() {
    let Some(chromium) = browser("CHROMIUM", "/usr/bin/chromium") else {
        panic!("Chromium is needed for the console's browser tests (deploy/dev/test.sh installs Debian's chromium)");
    };
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/console");
    assert!(
        std::path::Path::new(root).join("node_modules/playwright-core").exists(),
        "playwright-core is installed (deploy/dev/test.sh runs npm ci --prefix tests/console)"
    );
    let idp = hermes_testkit::oidc::OidcProvider::start().await.unwrap();
    let issuer = idp.issuer();
    let idp_issuer = issuer.clone();
    let tg = hermes_testkit::telegram::TelegramEmulator::start().await.unwrap();
    tg.add_bot(BOT_TOKEN, "ConsoleBot");
    let telegram = tg.base_url();
    let env = TestEnv::start_with(crate::harness::Roles::default(), |c| {
        c.admin.oidc.issuer = Some(issuer);
        c.admin.oidc.client_id = hermes_testkit::oidc::CLIENT_ID.into();
        c.admin.oidc.client_secret = Some(hermes_testkit::oidc::CLIENT_SECRET.into());
        // The scripted model lives on loopback: the operator trusts it, as one would an
        // in-cluster model server, so the console may point an agent at it.
        c.outbound.trusted_private_hosts = vec!["127.0.0.1".into()];
        c.platforms.telegram_api_base = telegram;
    })
    .await;
    let _gateway = crate::telegram::Pod::start(&env).await;
    // A conversation whose user text and answer both carry the payloads.
    let (acme, owner) = acme_showing_payloads(&env).await;
    let (other, _, _) = env.tenant("other", "helper").await;
    // A team key the console binds to an agent's sandboxes.
    env.pool_key(acme, "gh", "team", "ghp_console_team_key", "api.github.com").await;
    // The bot's agent has two toolsets, so its groups can be kept to one.
    sqlx::query("UPDATE agents SET toolsets = ARRAY['terminal', 'memory'] WHERE tenant_id = $1 AND name = 'helper'")
        .bind(acme.as_uuid())
        .execute(&env.db)
        .await
        .unwrap();

    let owner_link = env.store.admin().create_sign_in_link(owner, std::time::Duration::from_secs(600)).await.unwrap();
    let member = env.store.admin().ensure_person("mia@acme.test", "Mia Member", false, &cli()).await.unwrap();
    env.store.admin().add_member(acme, member.id, MemberRole::Member, &cli()).await.unwrap();
    let hash = hermes_api::admin::password::hash("mia's long passphrase".into()).await.unwrap();
    env.store.admin().set_password_hash(member.id, &hash, None, &cli()).await.unwrap();

    // An operator, and a sandbox a worker has reported (the operators' cluster view shows it).
    let ops = env.store.admin().ensure_person("ops@example.com", "Otto Ops", true, &cli()).await.unwrap();
    let ops_link = env.store.admin().create_sign_in_link(ops.id, std::time::Duration::from_secs(600)).await.unwrap();
    let census = hermes_cache::Cache::connect(&env.config.redis.url, &env.config.redis.key_prefix)
        .await
        .unwrap()
        .sandbox_census();
    let report = hermes_core::census::SandboxReport {
        worker: "worker-browser".into(),
        at: chrono::Utc::now(),
        sandboxes: vec![hermes_core::census::LiveSandbox {
            tenant_id: acme.as_uuid(),
            agent_id: uuid::Uuid::now_v7(),
            backend: "docker".into(),
            name: "hermes-sbx-reported".into(),
            running_execs: 1,
            running_processes: 2,
            idle_secs: 0,
        }],
    };
    census.publish(&report, std::time::Duration::from_secs(3600)).await.unwrap();

    // A session that has gone idle past the timeout: its cookie must land on the sign-in page.
    let stale = by_link(&env, owner).await;
    sqlx::query(
        "UPDATE console_sessions SET last_seen_at = now() - interval '2 hours' WHERE id IN (
                   SELECT id FROM console_sessions ORDER BY created_at DESC LIMIT 1)",
    )
    .execute(&env.db)
    .await
    .unwrap();

    // A stranger writes to the bot as soon as the console has bound it (and gets a code to
    // give an admin).
    let stranger = {
        let (db, tg, tenant) = (env.db.clone(), tg.clone(), acme);
        tokio::spawn(async move {
            for _ in 0..600 {
                let bound: i64 = sqlx::query_scalar("SELECT count(*) FROM channels WHERE tenant_id = $1")
                    .bind(tenant.as_uuid())
                    .fetch_one(&db)
                    .await
                    .unwrap();
                if bound > 0 {
                    tg.push_update(
                        BOT_TOKEN,
                        hermes_testkit::telegram::message_update(4242, "private", 4242, "hello bot", None),
                    );
                    return true;
                }
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            false
        })
    };

    // Whoever presses the single sign-on button is the owner, to the scripted provider.
    idp.next_login(Some(hermes_testkit::oidc::Login::as_user("owner@acme.test")));

    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let world = json!({
        "url": env.api_url,
        "tenant": acme.to_string(),
        "other_tenant": other.to_string(),
        "owner_link": env.config.console_link("link", &owner_link),
        "operator_link": env.config.console_link("link", &ops_link),
        "idp": { "issuer": idp_issuer, "client_id": hermes_testkit::oidc::CLIENT_ID, "client_secret": hermes_testkit::oidc::CLIENT_SECRET },
        "member_email": "mia@acme.test",
        "member_password": "mia's long passphrase",
        "stale_cookie": stale.cookie,
        "llm": env.llm.base_url(),
        "telegram_token": BOT_TOKEN,
        "screenshots": shots.display().to_string(),
    });
    let (exited_well, stdout, stderr) = walk(root, world, vec![("CHROMIUM", chromium)]).await;
    println!("{stdout}\n{stderr}");
    assert!(exited_well, "the browser tests failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");

    assert!(stranger.await.unwrap(), "the console bound the bot");
    // The stranger was let in, and told so in the chat.
    crate::harness::poll_until(async || {
        tg.sent(BOT_TOKEN)
            .iter()
            .any(|m| m.chat_id == "4242" && m.text.to_lowercase().contains("approved"))
            .then_some(())
    })
    .await
    .expect("the stranger hears they were let in");

    // What the browser did is in the audit log, as the people who did it.
    let actions: Vec<(String, String)> = sqlx::query_as(
        "SELECT action, actor_label FROM audit_log WHERE tenant_id = $1 AND actor_kind = 'person' ORDER BY id",
    )
    .bind(acme.as_uuid())
    .fetch_all(&env.db)
    .await
    .unwrap();
    assert!(actions.contains(&("invitation.created".into(), "owner@acme.test".into())), "{actions:?}");
    assert!(actions.contains(&("api_key.created".into(), "owner@acme.test".into())), "{actions:?}");
    assert!(actions.iter().any(|(a, who)| a == "invitation.accepted" && who == "newt@acme.test"), "{actions:?}");
    assert!(actions.iter().any(|(a, _)| a == "agent.created"), "{actions:?}");
    assert!(actions.iter().any(|(a, _)| a == "turn.stopped"), "{actions:?}");
    assert!(actions.iter().any(|(a, _)| a == "memory.rewritten"), "{actions:?}");
    assert!(actions.iter().any(|(a, _)| a == "channel.bound"), "{actions:?}");
    assert!(actions.iter().any(|(a, _)| a == "pairing.approved"), "{actions:?}");
    // The audiences' limits the console set are the ones the worker reads.
    let rules: Value = sqlx::query_scalar("SELECT toolsets FROM channels WHERE tenant_id = $1")
        .bind(acme.as_uuid())
        .fetch_one(&env.db)
        .await
        .unwrap();
    assert_eq!(rules, json!({"groups": ["memory"], "chats": {"-100team": ["terminal"]}}));
    let narrow: Option<Value> =
        sqlx::query_scalar("SELECT to_jsonb(toolsets) FROM api_keys WHERE tenant_id = $1 AND name = 'narrow key'")
            .bind(acme.as_uuid())
            .fetch_one(&env.db)
            .await
            .unwrap();
    assert_eq!(narrow, Some(json!(["memory"])));
    let bound: (String, Value) =
        sqlx::query_as("SELECT pool, placement FROM secret_bindings WHERE env_name = 'GITHUB_TOKEN'")
            .fetch_one(&env.db)
            .await
            .unwrap();
    assert_eq!(bound, ("gh".to_owned(), json!({"required_header": "authorization"})));
    assert!(actions.iter().any(|(a, _)| a == "channel.changed"), "{actions:?}");
    let stopped = env.count_of(acme, "SELECT count(*) FROM turns WHERE status = 'cancelled' AND tenant_id = $1").await;
    assert_eq!(stopped, 1, "the turn stopped from the console ended cancelled");
    for lang in ["en", "zh"] {
        for page in
            ["overview", "members", "keys", "audit", "sessions", "usage", "automation", "approvals", "transcript"]
        {
            let shot = shots.join(format!("{page}-{lang}.png"));
            assert!(shot.exists(), "{} was taken", shot.display());
        }
    }
}

/// The same console in Firefox ESR over WebDriver BiDi (`tests/firefox/console.mjs`): sign-in
/// by link and its cookie, every main page in both languages, inert payloads, a key made and
/// used, search, sign-out.
#[tokio::test]
async fn the_console_works_in_firefox_too() {
    let Some(firefox) = browser("FIREFOX", "/usr/bin/firefox-esr") else {
        panic!(
            "Firefox ESR is needed for the console's browser tests (deploy/dev/test.sh installs Debian's firefox-esr)"
        );
    };
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/firefox");
    assert!(
        std::path::Path::new(root).join("node_modules/puppeteer-core").exists(),
        "puppeteer-core is installed (deploy/dev/test.sh runs npm ci --prefix tests/firefox)"
    );
    let env = TestEnv::start_with(crate::harness::Roles { worker: true, scheduler: false }, |_| {}).await;
    let (acme, owner) = acme_showing_payloads(&env).await;
    let link = env.store.admin().create_sign_in_link(owner, std::time::Duration::from_secs(600)).await.unwrap();
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let world = json!({
        "url": env.api_url,
        "tenant": acme.to_string(),
        "owner_link": env.config.console_link("link", &link),
        "screenshots": shots.display().to_string(),
    });
    let home = std::env::temp_dir().join(format!("hermes-firefox-{}", std::process::id()));
    // Firefox wants a writable home for its profile.
    let vars = vec![("FIREFOX", firefox), ("HOME", home.display().to_string())];
    let (exited_well, stdout, stderr) = walk(root, world, vars).await;
    println!("{stdout}\n{stderr}");
    assert!(exited_well && stdout.contains(" passed, 0 failed"), "the Firefox tests failed:\n{stdout}\n{stderr}");
    let made = env.count_of(acme, "SELECT count(*) FROM api_keys WHERE tenant_id = $1 AND name = 'firefox key'").await;
    assert_eq!(made, 1, "the key made in Firefox is the tenant's");
    env.stop().await;
}
