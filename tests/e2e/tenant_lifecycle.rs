//! A tenant's whole data end to end (issue 42): its owner downloads everything it owns as one
//! archive (an admin of it and another tenant's owner may not); `hermesctl tenant delete`
//! removes its rows from every table, its keys in Redis, and (at the worker's next sweep) its
//! Docker sandbox and workspace volume, while another tenant's chat, sandbox and workspace go
//! on; the admin API's deletion is the operators' and finishes in the background.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::time::Duration;

use bollard::query_parameters::{ListContainersOptions, ListVolumesOptions};
use hermes_core::{MemberRole, TenantId};
use hermes_sandbox::Sandboxes as _;
use hermes_testkit::ScriptedReply;
use reqwest::Method;
use serde_json::Value;

use crate::admin::remote_cli::hermesctl_with;
use crate::admin::{cli, member, with_token};
use crate::harness::TestEnv;

/// The archive's files by path.
fn unpack(bytes: &[u8]) -> BTreeMap<String, String> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut files = BTreeMap::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().display().to_string();
        let mut text = String::new();
        entry.read_to_string(&mut text).unwrap();
        files.insert(path, text);
    }
    files
}

/// Docker containers and volumes whose names hold `tenant`'s id.
async fn docker_objects(tenant: TenantId) -> (usize, usize) {
    let docker = bollard::Docker::connect_with_local_defaults().unwrap();
    let filters = std::collections::HashMap::from([("name".to_owned(), vec![tenant.to_string()])]);
    let options = ListContainersOptions { all: true, filters: Some(filters.clone()), ..Default::default() };
    let containers = docker.list_containers(Some(options)).await.unwrap().len();
    let volumes = docker.list_volumes(Some(ListVolumesOptions { filters: Some(filters) })).await.unwrap();
    (containers, volumes.volumes.unwrap_or_default().len())
}

/// `tenant`'s rows in every table with a `tenant_id` (found from the catalogue).
async fn rows_left(env: &TestEnv, tenant: TenantId) -> BTreeMap<String, i64> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.columns
         WHERE table_schema = 'public' AND column_name = 'tenant_id' ORDER BY 1",
    )
    .fetch_all(&env.db)
    .await
    .unwrap();
    let mut left = BTreeMap::new();
    for table in tables {
        let n = env.count_of(tenant, &format!("SELECT count(*) FROM \"{table}\" WHERE tenant_id = $1")).await;
        left.insert(table, n);
    }
    left.insert("tenants".into(), env.count_of(tenant, "SELECT count(*) FROM tenants WHERE id = $1").await);
    left
}

#[tokio::test]
async fn an_owner_exports_a_tenant_and_its_deletion_leaves_nothing_of_it_anywhere() {
    let env = TestEnv::start().await;
    let (doomed, _, doomed_key) = env.tenant("doomed", "helper").await;
    let (kept, _, kept_key) = env.tenant("kept", "helper").await;
    // A request rate of its own (two a minute: the limiter keeps its key half a minute a
    // request), so Redis holds a key naming the tenant.
    env.store.tenancy().set_tenant_limits(doomed, Some(2), None).await.unwrap();
    for key in [&doomed_key, &kept_key] {
        env.llm.push(ScriptedReply::terminal("echo notes > notes.txt"));
        env.llm.push(ScriptedReply::text("written"));
        env.answered(key, "helper", "write the export notes").await;
    }
    assert_eq!(docker_objects(doomed).await, (1, 1), "doomed has a sandbox and a workspace volume");

    // The owner's export holds the tenant's conversation and none of its secrets or of
    // another tenant's rows; an admin of it and another tenant's owner get none.
    let (_, owner) = member(&env, doomed, "owner@doomed.test", MemberRole::Owner).await;
    let (_, admin) = member(&env, doomed, "admin@doomed.test", MemberRole::Admin).await;
    let (_, stranger) = member(&env, kept, "owner@kept.test", MemberRole::Owner).await;
    let path = format!("/admin/v1/tenants/{doomed}/export");
    assert_eq!(admin.call(&env, Method::GET, &path, None).await.0, 403, "an admin may not take everything");
    assert_eq!(
        stranger.call(&env, Method::GET, &path, None).await.0,
        404,
        "another tenant's owner sees no such tenant"
    );
    let resp = env.http.get(format!("{}{path}", env.api_url)).header("cookie", &owner.cookie).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/gzip");
    let files = unpack(&resp.bytes().await.unwrap());
    let manifest: Value = serde_json::from_str(&files["manifest.json"]).unwrap();
    assert_eq!(manifest["tenant"]["name"], "doomed");
    assert!(manifest["tables"]["messages"].as_i64().unwrap() >= 4, "{manifest}");
    let messages = &files["rows/messages/0001.jsonl"];
    assert!(messages.contains("write the export notes"), "{messages}");
    let keys: Value = serde_json::from_str(files["rows/api_keys/0001.jsonl"].lines().next().unwrap()).unwrap();
    assert!(keys.get("hash").is_none() && keys.get("name").is_some(), "a key's hash is withheld: {keys}");
    let foreign: Vec<&String> =
        files.iter().filter(|(_, text)| text.contains(&kept.to_string())).map(|(p, _)| p).collect();
    assert!(foreign.is_empty(), "another tenant's id in {foreign:?}");
    let audited =
        env.count_of(doomed, "SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'tenant.exported'");
    assert_eq!(audited.await, 1, "the export is in the tenant's log");

    // Deletion from the CLI, its name repeated; the tenant's Redis keys exist before.
    let cache = hermes_cache::Cache::connect(&env.config.redis.url, &env.config.redis.key_prefix).await.unwrap();
    assert!(!cache.tenant_keys(doomed).await.unwrap().is_empty(), "the tenant has keys in Redis (its request rate)");
    let vars = [
        ("HERMES__DATABASE__URL", env.config.database.url.as_str()),
        ("HERMES__SECRETS__MASTER_KEY", env.config.secrets.master_key.as_deref().unwrap()),
        ("HERMES__REDIS__URL", env.config.redis.url.as_str()),
        ("HERMES__REDIS__KEY_PREFIX", env.config.redis.key_prefix.as_str()),
        ("USER", "dana"),
    ];
    let run = |args: Vec<&'static str>| {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        tokio::task::spawn_blocking(move || {
            let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            hermesctl_with(&vars, &args)
        })
    };
    let (ok, out) = run(vec!["tenant", "delete", "--tenant", "doomed", "--confirm", "kept"]).await.unwrap();
    assert!(!ok && out.contains("nothing was deleted"), "{out}");
    assert_eq!(rows_left(&env, doomed).await["tenants"], 1);
    let (ok, out) = run(vec!["tenant", "delete", "--tenant", "doomed", "--confirm", "doomed"]).await.unwrap();
    assert!(ok && out.contains("deleted doomed"), "{out}");

    let left: BTreeMap<_, _> = rows_left(&env, doomed).await.into_iter().filter(|(_, n)| *n > 0).collect();
    assert!(left.is_empty(), "rows of the deleted tenant: {left:?}");
    assert!(cache.tenant_keys(doomed).await.unwrap().is_empty(), "no key in Redis names it");
    let models = env.http.get(format!("{}/v1/models", env.api_url)).bearer_auth(&doomed_key).send().await.unwrap();
    assert_eq!(models.status(), 401, "its API key is gone");
    let logged = env
        .count_of(doomed, "SELECT count(*) FROM audit_log WHERE tenant_id IS NULL AND object_id = $1::text AND action = 'tenant.deleted'")
        .await;
    assert_eq!(logged, 1, "the installation's log records the deletion");

    // The worker's sweep removes its sandbox and workspace, and only its.
    let docker = hermes_sandbox::docker::DockerSandboxes::connect(&env.config.sandbox).await.unwrap();
    let swept = hermes_sandbox::sweep_deleted(&docker, &hermes_worker::DeletedInStore(env.store.clone())).await;
    assert_eq!(swept.unwrap(), 2, "its container and its volume");
    assert_eq!(docker_objects(doomed).await, (0, 0));
    assert_eq!(docker_objects(kept).await, (1, 1), "the other tenant's sandbox and workspace stay");
    assert!(docker.tenants_kept().await.unwrap().contains(&kept.as_uuid()));
    env.llm.push(ScriptedReply::terminal("cat notes.txt"));
    env.llm.push(ScriptedReply::text("still here"));
    env.answered(&kept_key, "helper", "read the notes").await;
    env.stop().await;
}

#[tokio::test]
async fn only_an_operator_deletes_a_tenant_over_the_admin_api_and_it_finishes_in_the_background() {
    let env = TestEnv::start_roles(crate::harness::Roles::API_ONLY).await;
    let (gone, _, _) = env.tenant("gone-co", "helper").await;
    let (_, owner) = member(&env, gone, "owner@gone.test", MemberRole::Owner).await;
    let path = format!("/admin/v1/tenants/{gone}");
    assert_eq!(owner.call(&env, Method::DELETE, &path, None).await.0, 403, "an owner may not delete the tenant");

    let ops = env.store.admin().ensure_person("ops@example.com", "", true, &cli()).await.unwrap();
    let token = env.store.admin().create_operator_token(ops.id, "laptop", Duration::from_secs(600), &cli()).await;
    let (status, body) = with_token(&env, &token.unwrap().1, Method::DELETE, &path, None).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["status"], "deleting");
    assert_eq!(owner.call(&env, Method::GET, &path, None).await.0, 401, "its members' sessions end at once");
    crate::harness::poll_until(async || {
        (env.count_of(gone, "SELECT count(*) FROM tenants WHERE id = $1").await == 0).then_some(())
    })
    .await
    .expect("the deletion finished in the background");
    let left: i64 = rows_left(&env, gone).await.values().sum();
    assert_eq!(left, 0);
    env.stop().await;
}
