//! `hermesctl --url ... --token hat_...`: the operator's CLI over the admin API, with no
//! database URL and no master key, as the token it was given; what it changes is in the audit
//! log as that token.

use std::process::Command;

use serde_json::Value;

use super::cli;
use crate::harness::{Roles, TestEnv};

/// The `hermesctl` built beside this test binary (`deploy/dev/test.sh` builds it first).
fn hermesctl() -> String {
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(|deps| deps.parent()).unwrap().join("hermesctl").display().to_string()
}

/// `hermesctl` with only `PATH` and `vars` in its environment: its success and its output.
pub(crate) fn hermesctl_with(vars: &[(&str, &str)], args: &[&str]) -> (bool, String) {
    let out = Command::new(hermesctl())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(vars.iter().copied())
        .args(args)
        .output()
        .expect("hermesctl runs (deploy/dev/test.sh builds it)");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

fn run(url: &str, token: &str, args: &[&str]) -> (bool, String) {
    hermesctl_with(&[("HERMES_URL", url), ("HERMES_TOKEN", token)], args)
}

/// A command line run off the test's thread: its success and its output.
type Runs = tokio::task::JoinHandle<(bool, String)>;

/// `hermesctl --url` as a new admin token of the operator ops@example.com.
async fn operator_cli(env: &TestEnv) -> impl Fn(Vec<&'static str>) -> Runs + use<> {
    let ops = env.store.admin().ensure_person("ops@example.com", "", true, &cli()).await.unwrap();
    let (_, token) = env
        .store
        .admin()
        .create_operator_token(ops.id, "laptop", std::time::Duration::from_secs(3600), &cli())
        .await
        .unwrap();
    let url = env.api_url.clone();
    move |args| {
        let (url, token) = (url.clone(), token.clone());
        tokio::task::spawn_blocking(move || run(&url, &token, &args))
    }
}

/// `hermesctl` on `env`'s database with its master key, as the user `dana`, with `var` set.
fn database_cli(env: &TestEnv, var: (&'static str, &'static str)) -> impl Fn(Vec<&'static str>) -> Runs + use<> {
    let (db, master) = (env.config.database.url.clone(), env.config.secrets.master_key.clone().unwrap());
    move |args| {
        let (db, master) = (db.clone(), master.clone());
        tokio::task::spawn_blocking(move || {
            let vars = [
                ("HERMES__DATABASE__URL", db.as_str()),
                ("HERMES__SECRETS__MASTER_KEY", master.as_str()),
                ("USER", "dana"),
                var,
            ];
            hermesctl_with(&vars, &args)
        })
    }
}

#[tokio::test]
async fn hermesctl_manages_tenants_keys_and_members_over_the_admin_api() {
    let env = TestEnv::start_roles(Roles::API_ONLY).await;
    let go = operator_cli(&env).await;
    let url = env.api_url.clone();

    let (ok, out) = go(vec!["tenant", "create", "remote-co"]).await.unwrap();
    assert!(ok && out.contains("created tenant remote-co"), "{out}");
    let (ok, out) = go(vec!["--json", "tenant", "list"]).await.unwrap();
    assert!(ok, "{out}");
    let tenants: Value = serde_json::from_str(out.trim()).unwrap();
    assert!(tenants.as_array().unwrap().iter().any(|t| t["name"] == "remote-co"), "{tenants}");

    let (ok, out) = go(vec!["--json", "key", "create", "--tenant", "remote-co", "--name", "ci"]).await.unwrap();
    assert!(ok, "{out}");
    let key: Value = serde_json::from_str(out.trim()).unwrap();
    let secret = key["key"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("hk_"), "{key}");
    let models = env.http.get(format!("{url}/v1/models")).bearer_auth(&secret).send().await.unwrap();
    assert_eq!(models.status(), 200, "the key made over the API works");

    let (ok, out) =
        go(vec!["member", "add", "--tenant", "remote-co", "--email", "boss@remote.test", "--role", "owner"])
            .await
            .unwrap();
    assert!(ok && out.contains("/console/invite#"), "{out}");
    let (ok, out) =
        go(vec!["tenant", "limits", "--tenant", "remote-co", "--requests-per-minute", "120"]).await.unwrap();
    assert!(ok, "{out}");

    let (ok, out) = go(vec!["--json", "audit", "--tenant", "remote-co"]).await.unwrap();
    assert!(ok, "{out}");
    let entries: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let actions: Vec<&str> = entries.iter().map(|e| e["action"].as_str().unwrap()).collect();
    for action in ["api_key.created", "invitation.created", "tenant.quotas_set"] {
        assert!(actions.contains(&action), "{action} in {actions:?}");
    }
    assert!(entries.iter().all(|e| e["actor"]["kind"] == "token"), "recorded as the token: {entries:?}");

    let (ok, out) = go(vec!["price", "list"]).await.unwrap();
    assert!(!ok && out.contains("needs the database"), "{out}");
    let (ok, out) = tokio::task::spawn_blocking({
        let url = url.clone();
        move || run(&url, "hat_not_a_token", &["tenant", "list"])
    })
    .await
    .unwrap();
    assert!(!ok && out.contains("401"), "a bad token is refused: {out}");
}

/// `hermesctl` on the database directly, as the operating-system user `user`.
pub(crate) fn run_local(database_url: &str, user: &str, args: &[&str]) -> (bool, String) {
    let vars =
        [("HERMES__DATABASE__URL", database_url), ("USER", user), ("HIDDEN_PROVIDER_KEY", "sk-live-never-logged")];
    hermesctl_with(&vars, args)
}

#[tokio::test]
async fn hermesctl_on_the_database_records_each_change_as_the_user_who_ran_it_and_reads_nothing() {
    let env = TestEnv::start_roles(Roles::API_ONLY).await;
    let db = env.config.database.url.clone();
    let go = |args: Vec<&'static str>| {
        let db = db.clone();
        tokio::task::spawn_blocking(move || run_local(&db, "dana", &args))
    };
    let (ok, out) = go(vec!["tenant", "create", "local-co"]).await.unwrap();
    assert!(ok, "{out}");
    let (ok, made) = go(vec!["key", "create", "--tenant", "local-co", "--name", "ci"]).await.unwrap();
    assert!(ok, "{made}");
    let secret = made.split_whitespace().find(|w| w.starts_with("hk_")).expect("the key is shown once").to_owned();
    let (ok, out) = go(vec!["key", "list", "--tenant", "local-co"]).await.unwrap();
    assert!(ok, "{out}");
    let (ok, out) = go(vec![
        "credential",
        "add",
        "--tenant",
        "local-co",
        "--provider",
        "openai",
        "--label",
        "main",
        "--key-env",
        "HIDDEN_PROVIDER_KEY",
    ])
    .await
    .unwrap();
    // Storing a provider key needs the master key: refused, and a refused command is not recorded.
    assert!(!ok, "{out}");

    let tenant = env.store.tenancy().tenant_by_name("local-co").await.unwrap();
    let filter = hermes_store::admin::AuditFilter { limit: 100, ..Default::default() };
    let entries = env.store.admin().audit_entries(tenant.id, &filter).await.unwrap().entries;
    let what: Vec<(String, String, String)> =
        entries.iter().map(|e| (e.action.clone(), e.object_kind.clone(), e.actor.id.clone())).collect();
    // The tenant and its key are made by the same use cases as over the admin API, which
    // record what they made: the tenant in the installation's log, the key in the tenant's.
    assert_eq!(
        what,
        [("api_key.created".to_owned(), "api_key".to_owned(), "dana".to_owned())],
        "writes only, as the user who ran them"
    );
    let installation = env.store.admin().installation_audit_entries(&filter).await.unwrap().entries;
    let made = installation.iter().find(|e| e.action == "tenant.created" && e.object_id == tenant.id.to_string());
    let made = made.expect("the tenant's creation is in the installation's log");
    assert_eq!((made.actor.kind.as_str(), made.actor.id.as_str()), ("cli", "dana"));
    let key_create = serde_json::to_value(&entries[0]).unwrap();
    assert_eq!(key_create["after"]["name"], "ci", "{key_create}");
    assert_eq!(key_create["actor"]["kind"], "cli");
    assert!(!key_create.to_string().contains(&secret), "the secret is never recorded: {key_create}");
    assert!(!key_create.to_string().contains("sk-live"), "{key_create}");
}

#[tokio::test]
async fn hermesctl_manages_an_agents_mcp_servers_on_the_database_and_over_the_admin_api() {
    let env = TestEnv::start_roles(Roles::API_ONLY).await;
    env.tenant("mcp-co", "helper").await;
    let local = database_cli(&env, ("MCP_AUTH", "Bearer mcp-secret-value-1234"));
    // `hermesctl mcp add` for the team's helper: the server `name`, then what it is.
    let mcp_add = |name: &'static str, what: &[&'static str]| {
        [&["mcp", "add", "--tenant", "mcp-co", "--agent", "helper", "--name", name][..], what].concat()
    };
    let add = mcp_add(
        "tracker",
        &[
            "--server-url",
            "https://mcp.example.com/mcp",
            "--header-env",
            "Authorization=MCP_AUTH",
            "--include",
            "get_*",
        ],
    );
    let (ok, out) = local(add).await.unwrap();
    assert!(ok && out.contains("set MCP server tracker of helper"), "{out}");
    let both = mcp_add("x", &["--server-url", "https://a/", "--command", "npx"]);
    let (ok, out) = local(both).await.unwrap();
    assert!(!ok && out.contains("not both"), "{out}");
    let sealed: Vec<u8> = sqlx::query_scalar("SELECT secrets FROM mcp_servers").fetch_one(&env.db).await.unwrap();
    assert!(!String::from_utf8_lossy(&sealed).contains("mcp-secret-value"), "sealed at rest");

    // Over the admin API, as an operator: the same server, masked; then removed.
    let remote = operator_cli(&env).await;
    let (ok, out) = remote(vec!["--json", "mcp", "list", "--tenant", "mcp-co", "--agent", "helper"]).await.unwrap();
    assert!(ok, "{out}");
    let listed: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(listed[0]["name"], "tracker");
    assert_eq!(listed[0]["config"]["headers"]["Authorization"], "***");
    assert_eq!(listed[0]["config"]["tools"]["include"][0], "get_*");
    assert!(!out.contains("mcp-secret-value"), "{out}");
    let (ok, out) =
        remote(vec!["mcp", "remove", "--tenant", "mcp-co", "--agent", "helper", "--name", "tracker"]).await.unwrap();
    assert!(ok, "{out}");
    let (ok, out) = local(vec!["--json", "mcp", "list", "--tenant", "mcp-co", "--agent", "helper"]).await.unwrap();
    assert!(ok && out.trim() == "[]", "{out}");
}

#[tokio::test]
async fn hermesctl_creates_agents_on_the_database_and_over_the_admin_api_under_the_same_checks() {
    let env = TestEnv::start_roles(Roles::API_ONLY).await;
    env.tenant("agents-co", "helper").await;
    let local = database_cli(&env, ("PROVIDER_KEY", "sk-agent-secret-1234"));
    // `hermesctl agent create` of agent `name` at `base_url` in the team, and `more`.
    let agent_create = |name: &'static str, base_url: &'static str, more: &[&'static str]| {
        let named =
            ["agent", "create", "--tenant", "agents-co", "--name", name, "--model", "m", "--base-url", base_url];
        [&named[..], more].concat()
    };
    // The operator may name a model server on loopback from its own CLI.
    let mine = ["--json", "--api-key-env", "PROVIDER_KEY", "--fallback", "small@https://api.openai.com/v1", "--egress"];
    let (ok, out) = local(agent_create("local", "http://127.0.0.1:11434/v1", &mine)).await.unwrap();
    assert!(ok, "{out}");
    let made: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!((made["name"].as_str(), made["egress"].as_bool()), (Some("local"), Some(true)), "{made}");
    assert_eq!(made["fallbacks"][0]["model"], "small");
    assert_eq!(made["workspace"], "person", "a new agent gives each person their own workspace");
    assert_eq!(made["provider_key_hosts"][0], "127.0.0.1", "the key goes only to its server: {made}");
    let toolsets = |agent: &Value| serde_json::from_value::<Vec<String>>(agent["toolsets"].clone()).unwrap();
    let defaults = toolsets(&made);
    assert!(defaults.contains(&"terminal".into()) && !defaults.contains(&"web".into()), "{defaults:?}");
    // hermesctl's own configuration decides on the database: with a search service, web.
    let searching = database_cli(&env, ("HERMES__WEB__SEARXNG_URL", "http://127.0.0.1:9/searxng"));
    let (ok, out) = searching(agent_create("searching", "https://api.openai.com/v1", &["--json"])).await.unwrap();
    assert!(ok, "{out}");
    assert!(toolsets(&serde_json::from_str(out.trim()).unwrap()).contains(&"web".into()), "{out}");
    // The admin API's checks hold on the database too: an unknown toolset is refused.
    let (ok, out) =
        local(agent_create("odd", "https://api.openai.com/v1", &["--toolsets", "no_such_toolset"])).await.unwrap();
    assert!(!ok && out.contains("no_such_toolset"), "{out}");

    let remote = operator_cli(&env).await;
    let (ok, out) = remote(agent_create(
        "remote",
        "https://api.example.com/v1",
        &["--context-window", "32000", "--workspace", "session"],
    ))
    .await
    .unwrap();
    assert!(ok && out.contains("created agent remote"), "{out}");
    let (ok, out) = remote(agent_create("bare", "https://api.example.com/v1", &["--toolsets", ""])).await.unwrap();
    assert!(ok, "{out}");
    // Over the API the outbound policy holds: no model server on a private address.
    let (ok, out) = remote(agent_create("inside", "http://10.0.0.5/v1", &[])).await.unwrap();
    assert!(!ok && out.contains("not a public address"), "{out}");

    let tenant = env.store.tenancy().tenant_by_name("agents-co").await.unwrap();
    let listed = env.store.agents().list_agents(tenant.id).await.unwrap();
    let remote_made = listed.iter().find(|a| a.name == "remote").expect("made over the API");
    assert_eq!(remote_made.context_window, Some(32000), "the API takes what the CLI can set");
    assert_eq!(remote_made.workspace, hermes_core::WorkspaceScope::Session);
    // Named none: the server's defaults (it has no search service); `--toolsets ''`: none.
    assert!(remote_made.toolsets.contains(&"terminal".into()) && !remote_made.toolsets.contains(&"web".into()));
    let bare = listed.iter().find(|a| a.name == "bare").expect("made over the API");
    assert!(bare.toolsets.is_empty(), "{:?}", bare.toolsets);
    assert!(!listed.iter().any(|a| a.name == "odd" || a.name == "inside"), "refusals make nothing");
    let filter = hermes_store::admin::AuditFilter { limit: 100, ..Default::default() };
    let entries = env.store.admin().audit_entries(tenant.id, &filter).await.unwrap().entries;
    let created: Vec<(&str, &str)> = entries
        .iter()
        .filter(|e| e.action == "agent.created")
        .map(|e| (e.actor.kind.as_str(), e.after.as_ref().and_then(|a| a["name"].as_str()).unwrap_or_default()))
        .collect();
    assert_eq!(created.len(), 4, "{created:?}");
    assert!(created.contains(&("cli", "local")) && created.contains(&("token", "remote")), "{created:?}");
    let log = serde_json::to_string(&entries.iter().map(serde_json::to_value).collect::<Result<Vec<_>, _>>().unwrap());
    assert!(!log.unwrap().contains("sk-agent-secret"), "the provider key is never recorded");
}

#[tokio::test]
async fn hermesctl_changes_and_removes_members_on_the_database_and_over_the_admin_api_keeping_an_owner() {
    let env = TestEnv::start_roles(Roles::API_ONLY).await;
    let (tenant, _, _) = env.tenant("people-co", "helper").await;
    let local = database_cli(&env, ("UNUSED", ""));
    let remote = operator_cli(&env).await;
    let member = |verb: &'static str, email: &'static str, more: &[&'static str]| {
        [&["member", verb, "--tenant", "people-co", "--email", email][..], more].concat()
    };
    for (email, role) in [("ann@people.test", "owner"), ("bo@people.test", "member")] {
        let (ok, out) = local(member("add", email, &["--role", role])).await.unwrap();
        assert!(ok, "{out}");
    }

    // The one owner may not be removed or demoted, by either door.
    let (ok, out) = local(member("remove", "ann@people.test", &[])).await.unwrap();
    assert!(!ok && out.contains("at least one owner"), "{out}");
    let (ok, out) = remote(member("role", "ann@people.test", &["--role", "admin"])).await.unwrap();
    assert!(!ok && out.contains("at least one owner"), "{out}");

    let (ok, out) = remote(member("role", "bo@people.test", &["--role", "owner"])).await.unwrap();
    assert!(ok && out.contains("bo@people.test is owner of people-co (was member)"), "{out}");
    let (ok, out) = local(member("remove", "ann@people.test", &[])).await.unwrap();
    assert!(ok, "with another owner the first may go: {out}");
    let (ok, out) = remote(member("remove", "nobody@people.test", &[])).await.unwrap();
    assert!(!ok && out.contains("not a member"), "{out}");

    let members = env.store.admin().members(tenant).await.unwrap();
    let now: Vec<(&str, String)> = members.iter().map(|m| (m.person.email.as_str(), m.role.to_string())).collect();
    assert_eq!(now, [("bo@people.test", "owner".to_owned())]);
    let filter = hermes_store::admin::AuditFilter { limit: 100, ..Default::default() };
    let entries = env.store.admin().audit_entries(tenant, &filter).await.unwrap().entries;
    let by =
        |action: &str| entries.iter().filter(|e| e.action == action).map(|e| e.actor.kind.as_str()).collect::<Vec<_>>();
    assert_eq!((by("member.role_changed"), by("member.removed")), (vec!["token"], vec!["cli"]), "{entries:?}");
}

#[tokio::test]
async fn hermesctl_binds_a_team_credential_to_an_agents_sandboxes_on_the_database_and_over_the_admin_api() {
    let env = TestEnv::start_roles(Roles::API_ONLY).await;
    let (team, _, _) = env.tenant("sec-co", "helper").await;
    env.pool_key(team, "gh", "team", "ghp_hermesctl_never_printed", "api.github.com").await;
    let local = database_cli(&env, ("UNUSED", ""));
    let agent = ["--tenant", "sec-co", "--agent", "helper"];
    let bind =
        [&["secret", "bind"][..], &agent, &["--name", "GITHUB_TOKEN", "--credential", "gh", "--in-query"]].concat();
    let (ok, out) = local(bind).await.unwrap();
    assert!(ok && out.contains("bound GITHUB_TOKEN of helper to credential gh"), "{out}");
    let reserved = [&["secret", "bind"][..], &agent, &["--name", "PATH", "--credential", "gh"]].concat();
    let (ok, out) = local(reserved).await.unwrap();
    assert!(!ok && out.contains("the sandbox's own"), "{out}");

    // Over the admin API, as an operator: listed with its hosts, never the key; then unbound.
    let remote = operator_cli(&env).await;
    let (ok, out) = remote([&["--json", "secret", "list"][..], &agent].concat()).await.unwrap();
    assert!(ok && !out.contains("ghp_hermesctl_never_printed"), "{out}");
    let listed: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        (listed[0]["name"].as_str(), listed[0]["placement"]["query"].as_bool()),
        (Some("GITHUB_TOKEN"), Some(true))
    );
    assert_eq!(listed[0]["hosts"], serde_json::json!(["api.github.com"]));
    let (ok, out) = remote([&["secret", "unbind"][..], &agent, &["--name", "GITHUB_TOKEN"]].concat()).await.unwrap();
    assert!(ok, "{out}");
    let (ok, out) = local([&["--json", "secret", "list"][..], &agent].concat()).await.unwrap();
    assert!(ok && out.trim() == "[]", "{out}");
}
