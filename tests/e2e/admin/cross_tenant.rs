//! The admin API's cross-tenant sweep, generated from `/openapi.json`: every admin operation
//! that names a tenant is called by another tenant's owner, once with the victim's tenant id
//! and once with the intruder's own tenant id but the victim's object ids. Every call answers
//! 404, and nothing of the victim's changes. Every other admin operation (sign-in, `/me`, the
//! installation's) is called too: none answers with anything of the victim's, and the
//! installation's answer the intruder 403.

use hermes_core::MemberRole;
use reqwest::Method;
use serde_json::{Value, json};

use super::{cli, member};
use crate::harness::{Roles, TestEnv};

/// The victim's rows that no intruder may change.
const TABLES: [&str; 19] = [
    "provider_credentials",
    "mcp_servers",
    "secret_bindings",
    "provider_pools",
    "skills",
    "memberships",
    "invitations",
    "admin_tokens",
    "api_keys",
    "agents",
    "sessions",
    "memories",
    "turns",
    "channels",
    "cron_jobs",
    "event_hooks",
    "event_deliveries",
    "budgets",
    "interactions",
];

async fn snapshot(env: &TestEnv, tenant: hermes_core::TenantId) -> Vec<Vec<String>> {
    let mut all = Vec::new();
    for table in TABLES {
        let sql = format!("SELECT t::text FROM {table} t WHERE tenant_id = $1 ORDER BY 1");
        all.push(sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(tenant.as_uuid()).fetch_all(&env.db).await.unwrap());
    }
    all
}

#[tokio::test]
async fn every_admin_operation_on_another_tenants_objects_answers_404_and_changes_nothing() {
    let env = TestEnv::start_roles(Roles::API_ONLY).await;
    let (victim, agent, key) = env.tenant("victim", "helper").await;
    let (intruder, _, _) = env.tenant("intruder", "spy").await;
    member(&env, victim, "owner@victim.test", MemberRole::Owner).await;
    let (victim_member, _) = member(&env, victim, "member@victim.test", MemberRole::Member).await;
    let (_, spy) = member(&env, intruder, "owner@intruder.test", MemberRole::Owner).await;

    // One of each of the victim's objects the admin API names.
    let (invitation, _) = env
        .store
        .admin()
        .create_invitation(victim, "new@victim.test", MemberRole::Member, std::time::Duration::from_secs(600), &cli())
        .await
        .unwrap();
    let (token, _) = env
        .store
        .admin()
        .create_admin_token(victim, None, "deploy", MemberRole::Admin, std::time::Duration::from_secs(600), &cli())
        .await
        .unwrap();
    let api_key: String = sqlx::query_scalar("SELECT id::text FROM api_keys WHERE tenant_id = $1 LIMIT 1")
        .bind(victim.as_uuid())
        .fetch_one(&env.db)
        .await
        .unwrap();
    env.llm.push(hermes_testkit::ScriptedReply::text("hello"));
    // The turn stays queued (no worker here): a session and a turn to aim at.
    let _ =
        env.http.post(format!("{}/v1/runs", env.api_url)).bearer_auth(&key).json(&json!({"input": "hi"})).send().await;
    let (session, turn): (String, String) =
        sqlx::query_as("SELECT session_id::text, id::text FROM turns WHERE tenant_id = $1 LIMIT 1")
            .bind(victim.as_uuid())
            .fetch_one(&env.db)
            .await
            .unwrap();
    let bot = hermes_store::NewChannel {
        dm_policy: "pairing".parse().unwrap(),
        ..crate::harness::unreachable_telegram_bot(agent.id)
    };
    let channel = env.add_channel(victim, bot).await.id;
    // What the victim makes over its API: the id.
    let make = async |path: &str, body: Value| {
        let req = env.http.post(format!("{}{path}", env.api_url)).bearer_auth(&key).json(&body);
        let made: Value = req.send().await.unwrap().json().await.unwrap();
        made["id"].as_str().unwrap().to_owned()
    };
    let job = make("/v1/cron/jobs", json!({"prompt": "Digest.", "schedule": "every 1d"})).await;
    let endpoint = make("/v1/event-hooks", json!({"url": "https://hooks.example.com/x"})).await;
    let question = uuid::Uuid::now_v7();
    sqlx::query(
        "INSERT INTO interactions (id, tenant_id, turn_id, session_id, agent_id, call_id, kind, prompt, expires_at)
         VALUES ($1, $2, $3::uuid, $4::uuid, $5, 'c1', 'approval', '{}', now() + interval '1 hour')",
    )
    .bind(question)
    .bind(victim.as_uuid())
    .bind(&turn)
    .bind(&session)
    .bind(agent.id.as_uuid())
    .execute(&env.db)
    .await
    .unwrap();
    let skill_md = "---\nname: victim-skill\ndescription: The victim's own.\n---\n\nDo the thing.\n";
    super::save_team_skill(&env, victim, skill_md).await;
    let credential = env.pool_key(victim, "openai", "victim", "sk-victim", "api.openai.com").await.id;
    // A settled delivery (the gateway leaves it alone) and a spending cap.
    let delivery: uuid::Uuid = sqlx::query_scalar(
        "INSERT INTO event_deliveries (id, tenant_id, hook_id, event, data, status, attempts)
         VALUES (gen_random_uuid(), $1, $2::uuid, 'ping', '{}', 'failed', 1) RETURNING id",
    )
    .bind(victim.as_uuid())
    .bind(&endpoint)
    .fetch_one(&env.db)
    .await
    .unwrap();
    env.cap_spending(victim, Some(agent.id), hermes_core::BudgetPeriod::Day, (Some(5.0), None)).await;
    let mcp = (&json!({"url": "https://mcp.example.com/mcp"}), true);
    env.store.agents().set_mcp_server(victim, agent.id, "tracker", mcp, &json!({}), None).await.unwrap();
    let placement = hermes_core::secret_placement::SecretPlacement::default();
    env.store.agents().bind_secret(victim, agent.id, "OPENAI_KEY", "openai", &placement).await.unwrap();
    let objects: [(&str, String); 21] = [
        ("/agents/{agent}/mcp-servers/{name}", format!("/agents/{}/mcp-servers/tracker", agent.id)),
        ("/agents/{agent}/secrets/{name}", format!("/agents/{}/secrets/OPENAI_KEY", agent.id)),
        ("/deliveries/{delivery}", format!("/deliveries/{delivery}")),
        ("/budgets/{scope}/{period}", format!("/budgets/{}/day", agent.id)),
        ("/credentials/pools/{provider}", "/credentials/pools/openai".into()),
        ("/credentials/{id}", format!("/credentials/{credential}")),
        ("/skills/{name}/{action}", "/skills/victim-skill/disable".into()),
        ("/skills/{name}", "/skills/victim-skill".into()),
        ("/skills", "/skills".into()),
        ("/cron/{id}/{action}", format!("/cron/{job}/run")),
        ("/cron/{id}/runs", format!("/cron/{job}/runs")),
        ("/hooks/{id}", format!("/hooks/{endpoint}")),
        ("/approvals/{id}", format!("/approvals/{question}")),
        ("/channels/{id}", format!("/channels/{channel}")),
        ("/members/{person}", format!("/members/{victim_member}")),
        ("/agents/{agent}", format!("/agents/{}", agent.id)),
        ("/invitations/{id}", format!("/invitations/{}", invitation.id)),
        ("/tokens/{id}", format!("/tokens/{}", token.id)),
        ("/keys/{id}", format!("/keys/{api_key}")),
        ("/sessions/{id}", format!("/sessions/{session}")),
        ("/turns/{id}", format!("/turns/{turn}")),
    ];
    let before = snapshot(&env, victim).await;

    let doc: Value = env.http.get(format!("{}/openapi.json", env.api_url)).send().await.unwrap().json().await.unwrap();
    let (mut attempts, mut leaks) = (0, Vec::new());
    for (template, item) in doc["paths"].as_object().unwrap() {
        if !template.contains("{tenant}") {
            continue;
        }
        let mut path = template.clone();
        let mut names_object = false;
        for (from, to) in &objects {
            if path.contains(from) {
                path = path.replace(from, to);
                names_object = true;
            }
        }
        assert!(!path.replace("{tenant}", "").contains('{'), "no object of the victim for {template}: add one");
        for method in ["get", "post", "patch", "put", "delete"] {
            if item.get(method).is_none() {
                continue;
            }
            let body = match method {
                "patch" => json!({"role": "owner"}),
                "put" if template.ends_with("/memory") => json!({"target": "memory", "entries": ["pwned"]}),
                "put" if template.contains("/skills/") => {
                    json!({"skill_md": "---\nname: victim-skill\ndescription: Mine now.\n---\n\nx\n"})
                }
                "put" if template.ends_with("/pools/{provider}") => json!({"strategy": "random"}),
                "put" => json!({"requests_per_minute": 1}),
                "post" if template.ends_with("/invitations") => json!({"email": "spy@intruder.test", "role": "owner"}),
                "post" if template.ends_with("/agents") => {
                    json!({"name": "x", "model": "m", "provider_base_url": "https://a.example/v1"})
                }
                "post" if template.ends_with("/approve") => json!({"code": "ABCDEFGH"}),
                "post" if template.contains("/approvals/") => json!({"choice": "once"}),
                "post" if template.ends_with("/channels") => {
                    json!({"agent": "helper", "platform": "telegram", "token": "1:x"})
                }
                // A body no route accepts: the tenant must be refused before the body is read.
                "post" => json!({"name": "spy"}),
                _ => Value::Null,
            };
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            // The victim's tenant by id; and the intruder's own tenant with the victim's objects.
            for tenant in [victim, intruder] {
                let concrete = path.replace("{tenant}", &tenant.to_string());
                // The intruder's own tenant is theirs: only the victim's objects in it are tested
                // (a tenant skill is named, not numbered: the same name in one's own tenant is
                // one's own skill, and the snapshot shows the victim's is untouched).
                let named_not_numbered =
                    template.ends_with("/tenants/{tenant}/skills/{name}") || template.ends_with("/pools/{provider}");
                if tenant == intruder && (!names_object || named_not_numbered) {
                    continue;
                }
                let (status, answer) =
                    spy.call(&env, method.clone(), &concrete, (!body.is_null()).then(|| body.clone())).await;
                attempts += 1;
                if status != 404 {
                    leaks.push(format!("{method} {concrete} -> {status} {answer}"));
                }
            }
        }
    }
    // The routes that name no tenant: none tells the intruder anything of the victim's, and
    // the installation's (every tenant, tokens over all of them, the cluster, its log) are the
    // operators' alone. Signing out or changing a password would only end the spy's own session.
    let marks = [victim.to_string(), "victim".to_owned(), "@victim.test".to_owned()];
    let installation = ["/admin/v1/tenants", "/admin/v1/tokens", "/admin/v1/cluster", "/admin/v1/audit"];
    for (template, item) in doc["paths"].as_object().unwrap() {
        let own_session = template.ends_with("/sign-out") || template.ends_with("/me/password");
        if template.contains("{tenant}") || !template.starts_with("/admin/v1/") || own_session {
            continue;
        }
        for method in ["get", "post", "patch", "put", "delete"].into_iter().filter(|m| item.get(*m).is_some()) {
            let body = (method != "get").then(|| json!({"name": "victim-two"}));
            let verb = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let (status, answer) = spy.call(&env, verb, template, body).await;
            attempts += 1;
            let told = answer.to_string();
            let operators_only = installation.contains(&template.as_str()) && status != 403;
            if operators_only || marks.iter().any(|m| told.contains(m.as_str())) {
                leaks.push(format!("{method} {template} -> {status} {answer}"));
            }
        }
    }
    eprintln!("admin cross-tenant sweep: {attempts} attempts, {} leaks", leaks.len());
    assert!(attempts >= 30, "the sweep tried enough: {attempts}");
    assert!(leaks.is_empty(), "answered to another tenant:\n{}", leaks.join("\n"));
    assert_eq!(snapshot(&env, victim).await, before, "nothing of the victim's changed");
}
