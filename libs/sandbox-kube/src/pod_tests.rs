//! The pod's two users: sandboxd runs the agent's programs as one and stdio MCP servers as
//! another, whose home it makes in a volume of its own.

use hermes_core::{AgentId, TenantId};
use hermes_sandbox::{MCP_HOME_MOUNT, SandboxKey};

use crate::manifests::{Names, pod};

#[test]
fn mcp_servers_run_as_their_own_user_with_a_fresh_home_volume() {
    let tenant = TenantId::mint();
    let key = SandboxKey::shared(tenant, AgentId::new());
    let cfg = hermes_config::KubernetesSandboxConfig::default();
    let spec = pod(&cfg, key, &Names::of("hermes", key), &Default::default(), 60).spec.unwrap();
    let container = &spec.containers[0];
    let command = container.command.clone().unwrap();
    assert!(command.windows(2).any(|w| w == ["--run-as", "1000:1000"]), "{command:?}");
    assert!(command.windows(2).any(|w| w == ["--mcp-as", "1001:1001"]), "{command:?}");
    let mounts = container.volume_mounts.clone().unwrap();
    let mount = mounts.iter().find(|m| m.mount_path == MCP_HOME_MOUNT).expect("the MCP user's volume");
    let volume = spec.volumes.unwrap().into_iter().find(|v| v.name == mount.name).unwrap();
    assert!(volume.empty_dir.is_some(), "a fresh directory with each pod, which sandboxd closes");
}
