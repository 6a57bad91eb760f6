//! Under Kubernetes no program in a sandbox is pointed at a proxy on the pod's loopback: sandboxd
//! runs no egress relay there (the pod cannot reach the workers' egress proxy), so any sandbox
//! process could bind 127.0.0.1:3128 and read or forge the traffic sent to it. The pod names no
//! proxy, and the browser, which uses one only when its sandbox's `HTTP_PROXY` names it
//! (hermes-browser's launch tests), goes out directly, under the pod's NetworkPolicy.

use hermes_core::{AgentId, TenantId};
use hermes_sandbox::{PROXY_ENV, SandboxKey};
use hermes_sandbox_kube::manifests_of;
use serde_json::Value;

#[test]
fn a_kubernetes_sandbox_points_no_program_at_a_proxy_on_its_loopback() {
    let tenant = TenantId::mint();
    let key = SandboxKey::shared(tenant, AgentId::new());
    let cfg = hermes_config::SandboxConfig::default();
    for internet in [false, true] {
        let manifests = manifests_of(&cfg, key, internet);
        let of_kind = |kind: &str| manifests.iter().find(|m| m["kind"] == kind).unwrap();
        let container = &of_kind("Pod")["spec"]["containers"][0];
        let env: Vec<&str> = container["env"].as_array().unwrap().iter().filter_map(|e| e["name"].as_str()).collect();
        assert!(PROXY_ENV.iter().all(|(name, _)| !env.contains(name)), "{env:?}");
        let command: Vec<&str> = container["command"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert!(!command.contains(&"--egress-socket"), "no relay holds 127.0.0.1:3128 here: {command:?}");
        // Egress is the NetworkPolicy's: public addresses with the agent's opt-in, else none.
        let egress = of_kind("NetworkPolicy")["spec"]["egress"].as_array().unwrap().clone();
        let opens = egress
            .iter()
            .flat_map(|rule| rule["to"].as_array().cloned().unwrap_or_default())
            .any(|peer| peer["ipBlock"]["cidr"] == "0.0.0.0/0");
        assert_eq!(opens, internet, "{egress:?}");
    }
}
