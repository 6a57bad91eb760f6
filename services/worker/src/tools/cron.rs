//! `cronjob`: the agent schedules its own runs (upstream's one tool with actions: create, list,
//! update, pause, resume, run, remove; jobs named by id or case-insensitive name). The rules are
//! those of the API and chat: schedules read by `hermes_schedule::timing` in the tenant's zone,
//! prompts scanned for injection. A job made from a chat delivers back to that chat. Cron runs
//! never get this tool (a job cannot make more jobs).

use hermes_core::ToolsetName;
use serde_json::{Value, json};

use hermes_core::cron::MAX_CONTEXT_FROM;
use hermes_store::cron::{Job, JobChanges, JobScript, NewJob};
use hermes_store::{Store, StoreError};
use hermes_tools::{Choice, SimpleTool, ToolCtx, ToolError, ToolSpec, choices, object_schema};

pub(crate) struct CronjobTool {
    pub store: Store,
    /// The chat this session talks to, where its jobs deliver by default.
    pub origin: Option<hermes_core::outbox::Destination>,
    /// This turn's toolsets (after the chat's, the key's and the webhook's limits): the jobs
    /// it makes get no more, so nobody schedules a run with tools they may not use.
    pub ceiling: Vec<String>,
}

choices! {
    enum CronAction {
        Create = "create",
        List = "list",
        Update = "update",
        Pause = "pause",
        Resume = "resume",
        Run = "run",
        Remove = "remove",
    }
}

/// A `deliver` list the model wrote, checked before it is stored.
fn checked_deliver(deliver: Option<String>) -> Result<Option<String>, ToolError> {
    if let Some(list) = &deliver {
        hermes_core::outbox::DeliveryTarget::list(list).map_err(|e| refuse(e.to_string()))?;
    }
    Ok(deliver)
}

fn text(args: &Value, key: &str) -> Option<String> {
    args.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
}

fn summary(job: &Job) -> Value {
    json!({ "job_id": job.id, "name": job.name, "schedule": job.schedule_display, "state": job.state,
            "next_run_at": job.next_run_at, "last_status": job.last_status, "deliver": job.deliver })
}

fn refuse(why: impl Into<String>) -> ToolError {
    ToolError::RespondToModel(why.into())
}

impl CronjobTool {
    /// Whether this session may see and change `job`: a chat's session only the jobs made in
    /// that chat (the model acts for whoever writes in it); an API session every job of the agent.
    fn reaches(&self, job: &hermes_store::cron::Job) -> bool {
        match &self.origin {
            Some(here) => job.origin.as_ref().is_some_and(|origin| origin.same_chat(here)),
            None => true,
        }
    }
}

fn storage(e: StoreError) -> ToolError {
    match e {
        StoreError::NotFound => refuse("no such job (use action=list to see the jobs)"),
        StoreError::Conflict(why) | StoreError::Invalid(why) => refuse(why),
        other => ToolError::Unavailable(format!("jobs cannot be changed right now: {other}")),
    }
}

fn scanned(prompt: &str) -> Result<(), ToolError> {
    match hermes_threats::scan_strict(prompt).first() {
        Some(finding) => Err(refuse(format!("the prompt was refused: it looks like {}", finding.reason))),
        None => Ok(()),
    }
}

impl CronjobTool {
    async fn timing(
        &self,
        ctx: &ToolCtx,
        schedule: &str,
        repeat: Option<i32>,
    ) -> Result<hermes_schedule::Timing, ToolError> {
        let tz = self.store.conversations().session_policy(ctx.tenant_id).await.map_err(storage)?.timezone;
        hermes_schedule::timing(schedule, tz.name(), repeat, chrono::Utc::now()).map_err(|e| refuse(e.to_string()))
    }

    async fn create(&self, ctx: &ToolCtx, args: &Value) -> Result<Value, ToolError> {
        let script = self.script(ctx, args).await?;
        let prompt = match text(args, "prompt") {
            Some(prompt) => prompt,
            None if script.no_agent => String::new(),
            None => return Err(refuse("`prompt` is required: what the job should do")),
        };
        let schedule = text(args, "schedule")
            .ok_or_else(|| refuse("`schedule` is required (every 2h, 0 8 * * *, 30m, a time)"))?;
        scanned(&prompt)?;
        let repeat = args.get("repeat").and_then(Value::as_i64).and_then(|n| i32::try_from(n).ok());
        let timing = self.timing(ctx, &schedule, repeat).await?;
        let default_deliver = if self.origin.is_some() { "origin" } else { "local" };
        let deliver = checked_deliver(text(args, "deliver"))?.unwrap_or_else(|| default_deliver.into());
        let label = script.script.clone().filter(|_| prompt.is_empty()).unwrap_or_else(|| prompt.clone());
        let new = NewJob {
            agent_id: ctx.agent_id,
            name: text(args, "name").unwrap_or_else(|| label.chars().take(50).collect()),
            prompt,
            skills: skills(args).unwrap_or_default(),
            // Upstream passes `{provider, model}`; the job's runs use the agent's provider.
            model: args.get("model").and_then(|m| m.as_str().or_else(|| m["model"].as_str())).map(str::to_owned),
            toolsets: Some(hermes_core::toolsets::within(asked_toolsets(args), &self.ceiling)),
            timing: (&timing).into(),
            deliver,
            origin: self.origin.clone(),
            script,
        };
        let job = self.store.automation().create_job(ctx.tenant_id, &new).await.map_err(storage)?;
        Ok(json!({ "success": true, "job": summary(&job) }))
    }

    /// The job's script settings, checked as the API checks them; the jobs it takes context
    /// from must be ones this session reaches (a chat's job never reads another chat's).
    async fn script(&self, ctx: &ToolCtx, args: &Value) -> Result<JobScript, ToolError> {
        let script = text(args, "script").map(|s| hermes_core::cron::script_path(&s)).transpose().map_err(refuse)?;
        if script.is_some() && ctx.workspace != hermes_core::Workspace::Shared {
            return Err(refuse(hermes_core::cron::SCRIPTS_NEED_ONE_WORKSPACE));
        }
        let no_agent = args.get("no_agent").and_then(Value::as_bool).unwrap_or(false);
        if no_agent && script.is_none() {
            return Err(refuse("no_agent needs a script: write one in /workspace/.hermes/scripts/ first"));
        }
        let workdir = text(args, "workdir").map(|w| hermes_core::cron::workdir(&w)).transpose().map_err(refuse)?;
        let references: Vec<&str> = match args.get("context_from") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(one)) => vec![one.as_str()],
            Some(Value::Array(many)) if many.len() <= MAX_CONTEXT_FROM && many.iter().all(Value::is_string) => {
                many.iter().filter_map(Value::as_str).collect()
            }
            Some(_) => return Err(refuse("context_from is a job's id or name, or a list of at most 10")),
        };
        let mut context_from = Vec::new();
        for reference in references.into_iter().map(str::trim).filter(|r| !r.is_empty()) {
            let found = self.store.automation().find_job(ctx.tenant_id, Some(ctx.agent_id), reference).await;
            let job = found.ok().filter(|job| self.reaches(job));
            let job =
                job.ok_or_else(|| refuse(format!("context_from: no job {reference:?} (action=list shows them)")))?;
            if !context_from.contains(&job.id) {
                context_from.push(job.id);
            }
        }
        Ok(JobScript { script, no_agent, context_from, workdir })
    }

    async fn change(&self, ctx: &ToolCtx, action: CronAction, args: &Value) -> Result<Value, ToolError> {
        let reference = text(args, "job_id").ok_or_else(|| refuse("`job_id` (an id or a name) is required"))?;
        let tenant = ctx.tenant_id;
        let job = self.store.automation().find_job(tenant, Some(ctx.agent_id), &reference).await.map_err(storage)?;
        if !self.reaches(&job) {
            return Err(storage(StoreError::NotFound));
        }
        let now = chrono::Utc::now();
        let changed = match action {
            CronAction::Pause => {
                Some(self.store.automation().set_job_state(tenant, job.id, Some("paused by the agent"), None).await)
            }
            CronAction::Resume => {
                let next =
                    hermes_schedule::resume_at(&job.schedule, &job.timezone, now).map_err(|e| refuse(e.to_string()))?;
                Some(self.store.automation().set_job_state(tenant, job.id, None, Some(next)).await)
            }
            CronAction::Run => Some(self.store.automation().set_job_state(tenant, job.id, None, Some(now)).await),
            CronAction::Remove => {
                self.store.automation().delete_job(tenant, job.id).await.map_err(storage)?;
                None
            }
            CronAction::Create | CronAction::List | CronAction::Update => {
                if let Some(field) =
                    ["script", "no_agent", "context_from", "workdir"].iter().find(|f| args.get(**f).is_some())
                {
                    return Err(refuse(format!(
                        "update cannot change `{field}` yet: remove the job and create it again with it"
                    )));
                }
                let prompt = text(args, "prompt");
                if let Some(p) = &prompt {
                    scanned(p)?;
                }
                let timing = match text(args, "schedule") {
                    Some(s) => Some((&self.timing(ctx, &s, None).await?).into()),
                    None => None,
                };
                let changes = JobChanges {
                    name: text(args, "name"),
                    prompt,
                    skills: skills(args),
                    deliver: checked_deliver(text(args, "deliver"))?,
                    timing,
                };
                Some(self.store.automation().update_job(tenant, job.id, &changes).await)
            }
        };
        match changed {
            Some(job) => Ok(json!({ "success": true, "job": summary(&job.map_err(storage)?) })),
            None => Ok(json!({ "success": true, "removed": job.name })),
        }
    }
}

fn asked_toolsets(args: &Value) -> Option<Vec<String>> {
    let list = args.get("enabled_toolsets").and_then(Value::as_array)?;
    Some(list.iter().filter_map(Value::as_str).map(str::to_owned).collect())
}

fn skills(args: &Value) -> Option<Vec<String>> {
    args.get("skills")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).map(str::to_owned).collect())
}

impl SimpleTool for CronjobTool {
    const SPEC: ToolSpec = ToolSpec::new(
        "cronjob",
        ToolsetName::Cronjob,
        "Schedule tasks you will run on your own later, repeatedly or once: a daily brief, a \
                reminder, a weekly check. Each run starts fresh (no conversation history) with the job's prompt, \
                so write the prompt as a complete instruction. Schedules: `every 30m|2h|1d`, a cron expression \
                like `0 8 * * 1-5` (in the team's time zone), an ISO time, or a delay like `30m` (once). Jobs \
                made here deliver their answer to this chat unless `deliver` says otherwise (`local` stores \
                it only, `telegram:<chat id>` sends it elsewhere). Refer to jobs by id or name.",
    )
    .sequential();

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "action": CronAction::schema(),
                "job_id": { "type": "string", "description": "The job's id or name (all but create and list)." },
                "prompt": { "type": "string", "description": "What each run does (create, update)." },
                "schedule": { "type": "string", "description": "When it runs (create, update)." },
                "name": { "type": "string" },
                "repeat": { "type": "integer", "description": "How many runs (default: one for a one-shot, forever otherwise)." },
                "deliver": { "type": "string" },
                "skills": { "type": "array", "items": { "type": "string" } },
                "model": { "type": "string", "description": "Another model for the runs (create; on your provider)." },
                "enabled_toolsets": { "type": "array", "items": { "type": "string" },
                                      "description": "Only these of your toolsets in the runs (create)." },
                "script": { "type": "string", "description": "A script you wrote in /workspace/.hermes/scripts/ (its path there), run before each run (create): what it prints goes above the prompt; a last line {\"wakeAgent\": false} or no output skips the run. .sh/.bash run with bash, others with python3." },
                "no_agent": { "type": "boolean", "description": "The script is the job (create): what it prints is delivered as it is, nothing when it prints nothing, no model call. For watchdogs and alerts whose message the script fully decides." },
                "context_from": { "type": "array", "items": { "type": "string" }, "description": "Jobs (ids or names) whose latest output goes above the prompt (create)." },
                "workdir": { "type": "string", "description": "The runs' working folder in /workspace: commands, relative paths and the script start there; its AGENTS.md is read (create)." }
            }),
            &["action"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let answer = match CronAction::read(&args, "action") {
            Some(CronAction::Create) => self.create(ctx, &args).await?,
            Some(CronAction::List) => {
                let mut jobs =
                    self.store.automation().list_jobs(ctx.tenant_id, Some(ctx.agent_id)).await.map_err(storage)?;
                jobs.retain(|job| self.reaches(job));
                json!({ "success": true, "jobs": jobs.iter().map(summary).collect::<Vec<_>>() })
            }
            Some(action) => self.change(ctx, action, &args).await?,
            None => return Err(refuse("`action` must be create, list, update, pause, resume, run or remove")),
        };
        Ok(answer.to_string())
    }
}
