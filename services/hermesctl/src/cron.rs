//! `hermesctl cron ...`: a tenant's scheduled agent runs, with the rules of the API and chat
//! (`hermes_schedule::timing` in the tenant's zone, prompts scanned for injection).

use anyhow::{Context, bail};
use clap::Subcommand;
use serde_json::json;

use hermes_store::cron::NewJob;
use hermes_store::{Store, StoreError};

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
        #[arg(long)]
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

/// The tenant and its job that `r` names.
async fn job(store: &Store, r: &TenantJob) -> anyhow::Result<(hermes_store::Tenant, hermes_store::cron::Job)> {
    let t = tenant(store, &r.tenant).await?;
    let reference = &r.job;
    match store.find_job(t.id, None, reference).await {
        Ok(job) => Ok((t, job)),
        Err(StoreError::NotFound) => bail!("no job {reference:?} (hermesctl cron list shows them)"),
        Err(e) => Err(e.into()),
    }
}

pub async fn run_cron(json_mode: bool, store: &Store, cmd: CronCmd) -> anyhow::Result<()> {
    let now = chrono::Utc::now();
    match cmd {
        CronCmd::List(t) => {
            let t = t.resolve(store).await?;
            let jobs = store.list_jobs(t.id, None).await?;
            print_lines(json_mode, &jobs, |j| {
                format!("{}\t{}\t{}\t{}\tnext {:?}", j.id, j.name, j.schedule_display, j.state, j.next_run_at)
            });
        }
        CronCmd::Create {
            owner: TenantAgent { tenant: name, agent },
            schedule,
            prompt,
            name: job_name,
            timezone,
            repeat,
            deliver,
        } => {
            let t = tenant(store, &name).await?;
            let agent = store.agent_by_name(t.id, &agent).await.context("no such agent")?;
            if let Some(finding) = hermes_threats::scan_strict(&prompt).first() {
                bail!("the prompt was refused: it looks like {}", finding.reason);
            }
            let tz = match timezone {
                Some(tz) => tz,
                None => store.session_policy(t.id).await?.timezone.name().to_owned(),
            };
            let timing = hermes_schedule::timing(&schedule, &tz, repeat, now)?;
            let new = NewJob {
                agent_id: agent.id,
                name: job_name.unwrap_or_else(|| prompt.chars().take(50).collect()),
                prompt,
                skills: Vec::new(),
                model: None,
                toolsets: None,
                timing: (&timing).into(),
                deliver,
                origin: None,
            };
            let job = store.create_job(t.id, &new).await?;
            let first = timing.first_run.with_timezone(&timing.tz).format("%Y-%m-%d %H:%M %Z");
            print(
                json_mode,
                json!(job),
                format!("scheduled {} ({}); first run {first}", job.name, job.schedule_display),
            );
        }
        CronCmd::Pause(r) => {
            let (t, j) = job(store, &r).await?;
            let j = store.set_job_state(t.id, j.id, Some("paused by an operator"), None).await?;
            print(json_mode, json!(j), format!("paused {}", j.name));
        }
        CronCmd::Resume(r) => {
            let (t, j) = job(store, &r).await?;
            let next = hermes_schedule::resume_at(&j.schedule, &j.timezone, now)?;
            let j = store.set_job_state(t.id, j.id, None, Some(next)).await?;
            print(json_mode, json!(j), format!("resumed {}; next run {:?}", j.name, j.next_run_at));
        }
        CronCmd::Run(r) => {
            let (t, j) = job(store, &r).await?;
            let j = store.set_job_state(t.id, j.id, None, Some(now)).await?;
            print(json_mode, json!(j), format!("{} runs at the scheduler's next pass", j.name));
        }
        CronCmd::Runs(r) => {
            let (t, j) = job(store, &r).await?;
            let runs = store.job_runs(t.id, j.id, 20).await?;
            print_lines(json_mode, &runs, |r| {
                format!("{}\t{}\t{}", r.scheduled_for, r.status, r.output.as_deref().unwrap_or(""))
            });
        }
        CronCmd::Remove(r) => {
            let (t, j) = job(store, &r).await?;
            store.delete_job(t.id, j.id).await?;
            print(json_mode, json!({ "id": j.id, "deleted": true }), format!("removed {}", j.name));
        }
    }
    Ok(())
}
