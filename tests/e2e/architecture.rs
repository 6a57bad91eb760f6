//! The crate dependency direction of docs/ARCHITECTURE.md, checked with `cargo metadata`:
//! core and the small leaves (threats, net-policy) depend on nothing of ours, the agent knows
//! no database/queue/sandbox crate, adapters build only on the foundations and not on each
//! other, what only scans text does not link the agent, `services/` holds only the roles and the
//! binaries, no service links another, and only `hermesd` composes roles.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

struct Graph {
    /// Package name -> names of its normal (non-dev, non-build) dependencies, direct.
    direct: BTreeMap<String, BTreeSet<String>>,
    workspace: BTreeSet<String>,
    /// Workspace crates whose manifest lies under `services/`.
    services: BTreeSet<String>,
    /// Workspace package name -> its `cargo metadata` package (features, declared dependencies).
    manifests: BTreeMap<String, Value>,
}

impl Graph {
    fn load() -> Self {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        // Only this platform's dependencies: a fresh machine has not downloaded the others
        // (Android's, Windows'), and offline metadata would fail on them.
        let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
        let version = Command::new(rustc).arg("-vV").output().expect("rustc runs");
        let version = String::from_utf8_lossy(&version.stdout).into_owned();
        let host = version.lines().find_map(|l| l.strip_prefix("host: ")).expect("rustc names its host").to_owned();
        let out = Command::new(cargo)
            .args(["metadata", "--format-version", "1", "--offline", "--locked", "--filter-platform", &host])
            .current_dir(root)
            .output()
            .expect("cargo metadata runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
        let name_of: BTreeMap<String, String> = meta["packages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["id"].as_str().unwrap().to_owned(), p["name"].as_str().unwrap().to_owned()))
            .collect();
        let services = meta["packages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["manifest_path"].as_str().unwrap().contains("/services/"))
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .collect();
        let workspace: BTreeSet<String> = meta["workspace_members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|id| name_of[id.as_str().unwrap()].clone())
            .collect();
        let mut direct = BTreeMap::new();
        for node in meta["resolve"]["nodes"].as_array().unwrap() {
            let name = name_of[node["id"].as_str().unwrap()].clone();
            let deps = node["deps"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["dep_kinds"].as_array().unwrap().iter().any(|k| k["kind"].is_null()))
                .map(|d| name_of[d["pkg"].as_str().unwrap()].clone())
                .collect();
            direct.insert(name, deps);
        }
        let manifests = meta["packages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| workspace.contains(p["name"].as_str().unwrap()))
            .map(|p| (p["name"].as_str().unwrap().to_owned(), p.clone()))
            .collect();
        Graph { direct, workspace, services, manifests }
    }

    /// Whether `krate` declares `dep` as optional, left out of its default features.
    fn optional_off_by_default(&self, krate: &str, dep: &str) -> bool {
        let manifest = &self.manifests[krate];
        let optional =
            manifest["dependencies"].as_array().unwrap().iter().any(|d| d["name"] == dep && d["optional"] == true);
        let default = manifest["features"]["default"].as_array().cloned().unwrap_or_default();
        optional && !default.iter().any(|f| f == dep || *f == format!("dep:{dep}").as_str())
    }

    /// The workspace crates that turn on `feature` of their dependency `krate`.
    fn enabling(&self, krate: &str, feature: &str) -> Vec<String> {
        let turns_on = |p: &Value| {
            p["dependencies"].as_array().unwrap().iter().any(|d| {
                d["name"] == krate
                    && d["kind"].is_null()
                    && d["features"].as_array().unwrap().iter().any(|f| f == feature)
            })
        };
        self.manifests.iter().filter(|(_, p)| turns_on(p)).map(|(name, _)| name.clone()).collect()
    }

    fn transitive(&self, from: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_owned()];
        while let Some(p) = stack.pop() {
            for d in self.direct.get(&p).into_iter().flatten() {
                if seen.insert(d.clone()) {
                    stack.push(d.clone());
                }
            }
        }
        seen
    }

    fn workspace_deps(&self, from: &str) -> BTreeSet<String> {
        self.direct[from].iter().filter(|d| self.workspace.contains(*d)).cloned().collect()
    }
}

const ROLES: [&str; 4] = ["hermes-api", "hermes-worker", "hermes-gateway", "hermes-scheduler"];
/// The binaries: the one that composes the roles, the operator's CLI, the sandbox's daemon.
const BINARIES: [&str; 3] = ["hermesd", "hermesctl", "hermes-sandboxd"];
const ADAPTERS: [&str; 8] = [
    "hermes-store",
    "hermes-queue",
    "hermes-cache",
    "hermes-sandbox",
    "hermes-llm",
    "hermes-skills",
    "hermes-chat",
    "hermes-http",
];
/// Small crates anyone may use (the injection scanner, the public-address policy, the HTTP
/// APIs' bodies): they depend on no workspace crate but core.
const LEAVES: [&str; 3] = ["hermes-threats", "hermes-net-policy", "hermes-wire"];
/// What every adapter may build on: the domain, the config, the leaves, and telemetry (logs,
/// metrics, and the trace context every hop hands on), itself built on core and config only.
const FOUNDATIONS: [&str; 6] =
    ["hermes-core", "hermes-config", "hermes-threats", "hermes-net-policy", "hermes-telemetry", "hermes-wire"];
/// The admin use cases the admin API and hermesctl share: they build on the store, the chat
/// platforms' binding, the MCP configuration's checks, the schedule parser and the
/// foundations, and no front end's crate.
const USE_CASES: [&str; 1] = ["hermes-ops"];
/// The one more workspace crate an adapter may use: the sandbox adapter speaks sandboxd's
/// protocol, which lives in its own crate.
const ADAPTER_EXTRAS: [(&str, &str); 1] = [("hermes-sandbox", "hermes-sandbox-proto")];
/// Crates that need only the injection scanner of the agent's crates, so they must not link
/// the agent loop and its tools; hermesctl still uses llm's provider-host table
/// (`hermes_llm::keys`) to bind API keys, the others not even llm.
/// A heavy crate a leaf names behind a feature of the same name, off by default, that one crate
/// turns on: wire's bodies decode straight from the store's rows, and nobody else links sqlx
/// through wire.
const GATED_HEAVY: [(&str, &str, &str); 1] = [("hermes-wire", "sqlx", "hermes-store")];
/// A benchmark that drives a role's own code links that role: the cron benchmark
/// (`loadtest/cron.sh`) runs the scheduler's pass. Nothing links the benchmark.
const BENCHMARK_ROLE_LINKS: [(&str, &str); 1] = [("hermes-loadtest", "hermes-scheduler")];
/// The benchmarks drive the platform emulators (10,000 Telegram bots in `hermes-gateway-bench`);
/// nothing shipped links testkit.
const BENCHMARK_TESTKIT_USERS: [&str; 2] = ["hermes-loadtest", "hermes-testkit"];
const SCANNER_ONLY: [&str; 5] = ["hermes-api", "hermes-gateway", "hermes-scheduler", "hermes-skills", "hermesctl"];

#[test]
fn crate_dependencies_point_the_way_the_design_says() {
    let g = Graph::load();
    // A misspelt name would pass every rule below without checking anything.
    for name in ROLES.iter().chain(&ADAPTERS).chain(&LEAVES).chain(&SCANNER_ONLY).chain(&USE_CASES) {
        assert!(g.workspace.contains(*name), "{name} is not a workspace crate");
    }
    assert!(g.workspace_deps("hermes-core").is_empty(), "core is a leaf: {:?}", g.workspace_deps("hermes-core"));

    let agent = g.transitive("hermes-agent");
    for banned in [
        "hermes-store",
        "hermes-queue",
        "hermes-cache",
        "hermes-sandbox",
        "hermes-sandbox-kube",
        "sqlx",
        "lapin",
        "redis",
        "bollard",
        "kube",
    ] {
        assert!(!agent.contains(banned), "hermes-agent must not depend on {banned}");
    }

    let telemetry: Vec<_> = g.workspace_deps("hermes-telemetry").into_iter().collect();
    assert_eq!(telemetry, ["hermes-config", "hermes-core"], "telemetry is a foundation: it builds on core and config");
    for leaf in LEAVES {
        let bad: Vec<_> = g.workspace_deps(leaf).into_iter().filter(|d| d != "hermes-core").collect();
        assert!(bad.is_empty(), "{leaf} is a leaf: it may depend only on core, not {bad:?}");
    }
    for adapter in ADAPTERS {
        let extra = ADAPTER_EXTRAS.iter().find(|(a, _)| *a == adapter).map(|(_, e)| *e);
        let allowed = |d: &String| FOUNDATIONS.contains(&d.as_str()) || Some(d.as_str()) == extra;
        let bad: Vec<_> = g.workspace_deps(adapter).into_iter().filter(|d| !allowed(d)).collect();
        assert!(bad.is_empty(), "{adapter} may depend only on {FOUNDATIONS:?} (and {extra:?}), not {bad:?}");
    }
    for krate in USE_CASES {
        let allowed = |d: &String| {
            FOUNDATIONS.contains(&d.as_str())
                || ["hermes-store", "hermes-chat", "hermes-mcp-config", "hermes-schedule"].contains(&d.as_str())
        };
        let bad: Vec<_> = g.workspace_deps(krate).into_iter().filter(|d| !allowed(d)).collect();
        assert!(
            bad.is_empty(),
            "{krate} may depend only on the store, chat, mcp-config, schedule and {FOUNDATIONS:?}, not {bad:?}"
        );
    }
    for krate in SCANNER_ONLY {
        let deps = g.transitive(krate);
        let banned: &[&str] = if krate == "hermesctl" {
            &["hermes-agent", "hermes-tools"]
        } else {
            &["hermes-agent", "hermes-tools", "hermes-llm"]
        };
        for heavy in banned {
            assert!(
                !deps.contains(*heavy),
                "{krate} needs only the scanner (hermes-threats), so it must not link {heavy}"
            );
        }
    }
    // The Kubernetes backend builds on the sandbox adapter's client and trait, and no more (its
    // pods' egress goes through the worker's proxy: no address list of its own).
    let kube: Vec<_> = g.workspace_deps("hermes-sandbox-kube").into_iter().collect();
    assert_eq!(kube, ["hermes-config", "hermes-core", "hermes-sandbox"], "hermes-sandbox-kube's dependencies");
    // sandboxd runs inside every sandbox: it knows the protocol and, to put its spans in the
    // worker's traces, telemetry (with the config type it takes), and nothing else of ours.
    // (reqwest comes with telemetry's OTLP/HTTP exporter; sandboxd exports over a unix socket.)
    let sandboxd: Vec<_> = g.workspace_deps("hermes-sandboxd").into_iter().collect();
    assert_eq!(sandboxd, ["hermes-config", "hermes-sandbox-proto", "hermes-telemetry"], "sandboxd must stay small");
    for heavy in ["sqlx", "lapin", "redis", "bollard", "kube"] {
        assert!(!g.transitive("hermes-sandboxd").contains(heavy), "sandboxd must not link {heavy}");
    }

    // `services/` holds the roles and the binaries, nothing else (a library there would be a
    // concern with a second home, as the admin plane once was), and no service links another
    // but hermesd, which composes the roles.
    let kinds: BTreeSet<String> = ROLES.iter().chain(&BINARIES).map(|s| s.to_string()).collect();
    assert_eq!(g.services, kinds, "services/ holds exactly the roles {ROLES:?} and the binaries {BINARIES:?}");
    for service in g.services.iter().filter(|s| *s != "hermesd") {
        let linked: Vec<_> = g.workspace_deps(service).into_iter().filter(|d| g.services.contains(d)).collect();
        assert!(linked.is_empty(), "{service} links the services {linked:?}");
    }
    for role in ROLES {
        let deps = g.transitive(role);
        for other in ROLES.iter().filter(|r| **r != role) {
            assert!(!deps.contains(*other), "role {role} must not depend on role {other}");
        }
        assert!(!deps.contains("hermesd"));
    }
    for pkg in &g.workspace {
        if pkg == "hermesd" {
            continue;
        }
        for role in ROLES.iter().filter(|role| !BENCHMARK_ROLE_LINKS.contains(&(pkg.as_str(), **role))) {
            assert!(!g.direct[pkg].contains(*role), "only hermesd composes roles, but {pkg} depends on {role}");
        }
        for (bench, _) in BENCHMARK_ROLE_LINKS {
            assert!(!g.direct[pkg].contains(bench), "{pkg} depends on the benchmark {bench}");
        }
        assert!(
            !g.direct[pkg].contains("hermes-testkit") || BENCHMARK_TESTKIT_USERS.contains(&pkg.as_str()),
            "{pkg} uses testkit outside dev-dependencies"
        );
    }
    for (leaf, heavy, user) in GATED_HEAVY {
        assert!(g.optional_off_by_default(leaf, heavy), "{leaf}'s {heavy} is optional and off by default");
        assert_eq!(g.enabling(leaf, heavy), [user], "only {user} turns on {leaf}'s {heavy}");
    }
    // Each heavy stack crate lives in one lib (and, behind an off-by-default feature, a leaf).
    for (krate, home) in [
        ("sqlx", "hermes-store"),
        ("lapin", "hermes-queue"),
        ("redis", "hermes-cache"),
        ("bollard", "hermes-sandbox"),
        ("kube", "hermes-sandbox-kube"),
        ("k8s-openapi", "hermes-sandbox-kube"),
    ] {
        let gated = |p: &String| GATED_HEAVY.iter().any(|(leaf, heavy, _)| p == leaf && *heavy == krate);
        let users: Vec<_> = g.workspace.iter().filter(|p| g.direct[*p].contains(krate) && !gated(p)).cloned().collect();
        assert_eq!(users, [home], "{krate} belongs in {home} only");
    }
}

/// Where an audit entry may be written apart from the change it describes, and why (review
/// L10). Every other change records its entry in its own transaction: the store's admin
/// methods take an `Audit`, and the admin API's and chat commands' other writes go through an
/// `AuditedTx` that commits the entry with them.
const ENTRY_APART: [(&str, &str, &str); 1] = [
    // The operator's local command, recorded as run (it has direct database access anyway).
    ("services/hermesctl/src/audit_trail.rs", "record_audit(", "a `cli.command` entry"),
];

/// Where an audited transaction may commit with no entry, and why.
const NO_ENTRY: [(&str, &str, &str); 2] = [
    ("libs/ops/src/channels.rs", "commit_refusal(", "a wrong pairing code counts toward the lockout"),
    ("services/gateway/src/pairing.rs", "commit_refusal(", "a wrong pairing code counts toward the lockout"),
];

fn rust_sources(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
        if path.is_dir() && !matches!(name.as_str(), "target" | "tests" | "node_modules") {
            rust_sources(&path, found);
        } else if name.ends_with(".rs") {
            found.push(path);
        }
    }
}

#[test]
fn changes_record_their_audit_entry_in_their_own_transaction() {
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let mut files = Vec::new();
    for top in ["services", "libs"] {
        rust_sources(&root.join(top), &mut files);
    }
    let mut apart = BTreeSet::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let rel = file.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        for call in ["record_audit(", "caller.record(", "commit_refusal("] {
            let uses = text.matches(call).count() - text.matches(&format!("fn {call}")).count();
            if uses > 0 {
                apart.insert((rel.clone(), call));
            }
        }
    }
    let allowed: BTreeSet<(String, &str)> =
        ENTRY_APART.iter().chain(&NO_ENTRY).map(|(file, call, _)| ((*file).to_owned(), *call)).collect();
    assert!(files.len() > 100, "the sources were not found under {}", root.display());
    assert_eq!(
        apart, allowed,
        "a change must record its entry in its own transaction (`Store::audited`, then `AuditedTx::commit`); \
         an entry apart from its change, or a commit without one, is listed here with why"
    );
}
