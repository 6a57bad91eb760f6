//! Under Kubernetes every program in a sandbox, the browser included (it uses a proxy only
//! when its sandbox's `HTTP_PROXY` names one: hermes-browser's launch tests), is pointed at
//! sandboxd's port on the pod's loopback, which sandboxd holds from its start (so no program
//! can take it) and hands to the worker's egress proxy. The pod's NetworkPolicy lets nothing
//! out, so a program ignoring the proxy reaches nothing either. An agent with bound secrets
//! gets their placeholders and the egress CA, which sandboxd writes as the trust files.

use hermes_core::{AgentId, TenantId};
use hermes_sandbox::spec::{TRUST_DIR, TRUST_ENV, TRUST_VARIABLES};
use hermes_sandbox::{PROXY_ENV, SandboxKey, SandboxSpec, Trust};
use hermes_sandbox_kube::manifests_of;
use serde_json::Value;

#[test]
fn a_kubernetes_sandbox_goes_out_only_through_sandboxd_with_its_agents_placeholders_and_trust() {
    let key = SandboxKey::shared(TenantId::mint(), AgentId::new());
    let cfg = hermes_config::SandboxConfig::default();
    let with_secret = SandboxSpec {
        env: [("GITHUB_TOKEN".to_owned(), "hermes_placeholder_0123".to_owned())].into(),
        trust: Some(Trust { pem: "<the egress CA>".into(), spki_sha256: "<its pin>".into() }),
        ..Default::default()
    };
    for spec in [SandboxSpec::default(), with_secret] {
        let manifests = manifests_of(&cfg, key, &spec);
        let of_kind = |kind: &str| manifests.iter().find(|m| m["kind"] == kind).unwrap();
        let pod = &of_kind("Pod")["spec"];
        let container = &pod["containers"][0];
        let env: Vec<(&str, &str)> = container["env"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| Some((e["name"].as_str()?, e["value"].as_str()?)))
            .collect();
        assert!(PROXY_ENV.iter().all(|pair| env.contains(pair)), "{env:?}");
        let command: Vec<&str> = container["command"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert!(command.contains(&"--egress-tunnel"), "sandboxd holds 127.0.0.1:3128: {command:?}");
        assert_eq!(of_kind("NetworkPolicy")["spec"]["egress"], serde_json::json!([]), "nothing else goes out");

        let trusted = spec.trust.is_some();
        assert_eq!(env.contains(&("GITHUB_TOKEN", "hermes_placeholder_0123")), trusted, "{env:?}");
        assert_eq!(TRUST_ENV.iter().all(|pair| env.contains(pair)), trusted, "{env:?}");
        assert_eq!(env.contains(&(TRUST_VARIABLES[0], "<the egress CA>")), trusted, "{env:?}");
        // sandboxd closes the directory to programs either way (no pin can be planted there).
        assert!(command.windows(2).any(|w| w == ["--trust-dir", TRUST_DIR]), "{command:?}");
        let mounts = container["volumeMounts"].as_array().unwrap();
        assert!(mounts.iter().any(|m| m["mountPath"] == TRUST_DIR), "{mounts:?}");
    }
}
