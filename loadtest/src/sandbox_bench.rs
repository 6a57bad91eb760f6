//! Sandbox latency per backend: cold create (a new tenant-agent's sandbox until its daemon
//! answers), attach (another worker connecting to a running sandbox), and the round trip of a
//! trivial command and of a file read. Prints medians and p90s; cleans up what it created.
//!
//! Usage: hermes-sandbox-bench --backend docker|local [--sandboxes N] [--execs M]

#![allow(clippy::print_stdout, reason = "a report on stdout is the point")]

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;

use hermes_config::SandboxBackend;
use hermes_core::{AgentId, TenantId};
use hermes_sandbox::proto::ReadFileRequest;
use hermes_sandbox::{ExecRequest, SandboxKey};

#[derive(Parser)]
struct Args {
    #[arg(long, default_value = "docker")]
    backend: SandboxBackend,
    /// Sandboxes to create (cold starts measured).
    #[arg(long, default_value_t = 10)]
    sandboxes: usize,
    /// Commands and reads per sandbox.
    #[arg(long, default_value_t = 50)]
    execs: usize,
    /// Docker image (docker backend).
    #[arg(long, default_value = "hermes-sandbox:test")]
    image: String,
    /// sandboxd on the host (local backend).
    #[arg(long, default_value = "")]
    sandboxd: String,
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1000.0;
    println!("{name:<28} median {:>8.2} ms   p90 {:>8.2} ms   (n={})", at(0.5), at(0.9), samples.len());
}

fn config(args: &Args, run: &str) -> hermes_config::SandboxConfig {
    let mut cfg = hermes_config::SandboxConfig { backend: args.backend, ..Default::default() };
    cfg.docker.image = args.image.clone();
    cfg.docker.name_prefix = format!("hbench-{run}");
    cfg.docker.ipc_dir = format!("/tmp/hbench-ipc/{run}");
    cfg.local.name_prefix = format!("hbench-{run}");
    cfg.local.ipc_dir = format!("/tmp/hbench-ipc/{run}");
    cfg.local.workspaces_dir = format!("/tmp/hbench-ws/{run}");
    cfg.local.sandboxd_path = args.sandboxd.clone();
    cfg
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let run = format!("{}", std::process::id());
    let cfg = config(&args, &run);
    let sandboxes = hermes_sandbox::connect(&cfg).await.context("sandbox backend")?;
    #[expect(clippy::disallowed_methods, reason = "a benchmark tenant, not from a request")]
    let tenant = TenantId::from_authenticated(uuid::Uuid::now_v7());
    let keys: Vec<SandboxKey> = (0..args.sandboxes).map(|_| SandboxKey::shared(tenant, AgentId::new())).collect();

    let mut cold = Vec::new();
    for key in &keys {
        let started = Instant::now();
        sandboxes.open(*key).await.context("create a sandbox")?;
        cold.push(started.elapsed());
    }
    // A second backend instance has no connections yet: what another worker pays to attach.
    let other = hermes_sandbox::connect(&cfg).await?;
    let mut attach = Vec::new();
    for key in &keys {
        let started = Instant::now();
        other.open(*key).await?;
        attach.push(started.elapsed());
    }
    let (mut exec, mut read) = (Vec::new(), Vec::new());
    for key in &keys {
        let client = sandboxes.open(*key).await?;
        client.exec(request("echo hi > note.txt"), &mut |_| {}).await?;
        for _ in 0..args.execs {
            let started = Instant::now();
            let out = client.exec(request("echo hi"), &mut |_| {}).await?;
            exec.push(started.elapsed());
            anyhow::ensure!(out.output == "hi\n", "unexpected output {:?}", out.output);
            let started = Instant::now();
            client.grpc().read_file(ReadFileRequest { path: "note.txt".into(), offset: 0, limit: 0 }).await?;
            read.push(started.elapsed());
        }
    }
    println!("backend: {:?}", args.backend);
    report("cold create (to first answer)", cold);
    report("attach from another worker", attach);
    report("exec round trip (echo)", exec);
    report("read_file round trip", read);
    drop((sandboxes, other));
    cleanup(&args, &run);
    Ok(())
}

fn request(command: &str) -> ExecRequest {
    ExecRequest { command: command.into(), workdir: None, timeout: Duration::from_secs(30), env: Default::default() }
}

fn cleanup(args: &Args, run: &str) {
    let script = if args.backend == SandboxBackend::Docker {
        format!(
            "docker ps -aq --filter label=io.hermes.sandbox.owner=hbench-{run} | xargs -r docker rm -f >/dev/null; \
             docker volume ls -q --filter name=hbench-{run}-ws- | xargs -r docker volume rm >/dev/null; \
             rm -rf /tmp/hbench-ipc/{run}"
        )
    } else {
        format!(
            "sleep 0.3; rm -rf /tmp/hbench-ipc/{run} /tmp/hbench-ws/{run}; \
             for d in /sys/fs/cgroup/*/hbench-{run}-sandboxes /sys/fs/cgroup/hbench-{run}-sandboxes; do \
             [ -d $d ] && rmdir $d/* $d 2>/dev/null; done; true"
        )
    };
    let _ = std::process::Command::new("sh").arg("-c").arg(script).status();
}
