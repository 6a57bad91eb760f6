//! `hermesctl cron ...`: a tenant's scheduled agent runs, through the use cases the APIs run
//! ([`hermes_ops::cron`]: prompts scanned, the schedule read in the tenant's zone, the change
//! recorded as the operator's CLI).

use anyhow::bail;
use clap::Subcommand;
use serde_json::json;

use hermes_ops::cron::{self as ops, Move};
use hermes_store::{Store, StoreError};
use hermes_wire::v1::CreateJob;

use crate::audit_trail::cli_actor;
use crate::cli::{TenantAgent, TenantArg, TenantJob, print, print_lines, tenant};

#[derive(Subcommand)]
pub enum CronCmd {
    /// The tenant's jobs.
    List(TenantArg),
    /// Schedule an agent run: `every 30m|2h|1d`, a cron expression, a time, or a delay like 30m.
    Create {
        #[command(flatten)]
        owner: TenantAgent,
        #[arg(long)]
        schedule: String,
        /// What the agent is asked (may be empty for a `--no-agent` job).
        #[arg(long, default_value = "")]
        prompt: String,
        #[arg(long)]
        name: Option<String>,
        /// An IANA time zone (the tenant's by default).
        #[arg(long)]
        timezone: Option<String>,
        #[arg(long)]
        repeat: Option<i32>,
        /// local (default), or platform:chat[:thread].
        #[arg(long, default_value = "local")]
        deliver: String,
        #[command(flatten)]
        script: Box<ScriptArgs>,
    },
    /// Stop scheduling a job (it is kept).
    Pause(TenantJob),
    /// Schedule a paused job again from its next slot.
    Resume(TenantJob),
    /// Run a job at the scheduler's next pass.
    Run(TenantJob),
    /// A job's latest runs and their outputs.
    Runs(TenantJob),
    /// Delete a job.
    Remove(TenantJob),
}

/// Upstream's script options of a job (`hermes cron create --script S --no-agent`).
#[derive(clap::Args)]
pub struct ScriptArgs {
    /// A script in the agent's scripts folder (`/workspace/.hermes/scripts/`), run before each
    /// run; what it prints goes above the prompt.
    #[arg(long)]
    script: Option<String>,
    /// The script is the job: what it prints is delivered as it is, with no model call.
    #[arg(long, requires = "script")]
    no_agent: bool,
    /// The runs' working folder in the workspace: commands, relative paths and the script start
    /// there, and its context file is read from there.
    #[arg(long)]
    workdir: Option<String>,
    /// A job (id or name) whose latest output goes above the prompt; repeat for more.
    #[arg(long = "context-from")]
    context_from: Vec<String>,
}

/// The tenant and its job that `r` names.
async fn job(store: &Store, r: &TenantJob) -> anyhow::Result<(hermes_store::Tenant, hermes_store::cron::Job)> {
    let t = tenant(store, &r.tenant).await?;
    let reference = &r.job;
    match store.automation().find_job(t.id, None, reference).await {
        Ok(job) => Ok((t, job)),
        Err(StoreError::NotFound) => bail!("no job {reference:?} (hermesctl cron list shows them)"),
        Err(e) => Err(e.into()),
    }
}

pub async fn run_cron(json_mode: bool, store: &Store, cmd: CronCmd) -> anyhow::Result<()> {
    match cmd {
        CronCmd::List(t) => {
            let t = t.resolve(store).await?;
            let jobs = store.automation().list_jobs(t.id, None).await?;
            print_lines(json_mode, &jobs, |j| {
                format!("{}\t{}\t{}\t{}\tnext {:?}", j.id, j.name, j.schedule_display, j.state, j.next_run_at)
            });
        }
        CronCmd::Create { owner, schedule, prompt, name: job_name, timezone, repeat, deliver, script } => {
            let (t, agent) = owner.resolve(store).await?;
            let ScriptArgs { script, no_agent, workdir, context_from } = *script;
            let c = CreateJob {
                prompt,
                schedule,
                name: job_name,
                timezone,
                repeat,
                deliver: Some(deliver),
                script,
                no_agent,
                workdir,
                context_from,
                ..CreateJob::default()
            };
            let job = ops::create(store, cli_actor(), (t.id, agent.id), c).await?;
            let first = job.next_run_at.map_or_else(|| "none".to_owned(), |at| first_run(at, &job.timezone));
            print(
                json_mode,
                json!(job),
                format!("scheduled {} ({}); first run {first}", job.name, job.schedule_display),
            );
        }
        CronCmd::Pause(r) => {
            let (_, j) = job(store, &r).await?;
            let j = ops::set_state(store, cli_actor(), &j, Move::Pause("paused by an operator")).await?;
            print(json_mode, json!(j), format!("paused {}", j.name));
        }
        CronCmd::Resume(r) => {
            let (_, j) = job(store, &r).await?;
            let j = ops::set_state(store, cli_actor(), &j, Move::Resume).await?;
            print(json_mode, json!(j), format!("resumed {}; next run {:?}", j.name, j.next_run_at));
        }
        CronCmd::Run(r) => {
            let (_, j) = job(store, &r).await?;
            let j = ops::set_state(store, cli_actor(), &j, Move::RunNow).await?;
            print(json_mode, json!(j), format!("{} runs at the scheduler's next pass", j.name));
        }
        CronCmd::Runs(r) => {
            let (t, j) = job(store, &r).await?;
            let runs = store.automation().job_runs(t.id, j.id, 20).await?;
            print_lines(json_mode, &runs, |r| {
                format!("{}\t{}\t{}", r.scheduled_for, r.status, r.output.as_deref().unwrap_or(""))
            });
        }
        CronCmd::Remove(r) => {
            let (_, j) = job(store, &r).await?;
            ops::remove(store, cli_actor(), &j).await?;
            print(json_mode, json!({ "id": j.id, "deleted": true }), format!("removed {}", j.name));
        }
    }
    Ok(())
}

/// `at` in the job's time zone, as people read it.
fn first_run(at: chrono::DateTime<chrono::Utc>, zone: &str) -> String {
    match hermes_schedule::time_zone(zone) {
        Ok(tz) => at.with_timezone(&tz).format("%Y-%m-%d %H:%M %Z").to_string(),
        Err(_) => at.to_rfc3339(),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::commands::{Cli, Command};

    fn create(args: &[&str]) -> Result<ScriptArgs, clap::Error> {
        let base = ["hermesctl", "cron", "create", "--tenant", "acme", "--agent", "helper", "--schedule", "every 5m"];
        match Cli::try_parse_from(base.iter().chain(args))?.command {
            Command::Cron(CronCmd::Create { script, .. }) => Ok(*script),
            _ => panic!("not a cron create"),
        }
    }

    #[test]
    fn a_script_job_takes_upstreams_options_and_no_agent_needs_a_script() {
        let args =
            ["--script", "ram.sh", "--no-agent", "--workdir", "ops", "--context-from", "a", "--context-from", "b"];
        let s = create(&args).unwrap();
        assert_eq!((s.script.as_deref(), s.no_agent, s.workdir.as_deref()), (Some("ram.sh"), true, Some("ops")));
        assert_eq!(s.context_from, ["a", "b"]);
        let err = create(&["--no-agent"]).err().unwrap().to_string();
        assert!(err.contains("--script"), "{err}");
    }
}
