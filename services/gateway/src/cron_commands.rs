//! `/cron` in chat: `add <schedule> <prompt> [--name N] [--skill S]... [--deliver T]`, `list`,
//! `edit <job> [--schedule S] [--prompt P] [--name N] [--skill S]... [--deliver T]`,
//! `pause|resume|run|remove <id or name>`. A schedule of several words is quoted
//! (`/cron add "every 2h" check the build`). A job made in a chat delivers to that chat by
//! default (`origin`). The same rules as the API apply: the schedule is read in the tenant's
//! time zone and the prompt is scanned for injection. `/cron` is an admin command by default,
//! and a chat sees and manages only the jobs made in it.

use hermes_core::outbox::DeliveryTarget;
use hermes_store::cron::{JobChanges, NewJob};
use hermes_store::{Channel, StoreError};

use crate::Gateway;
use crate::error::IngestError;
use crate::incoming::Incoming;
use crate::route::destination;

const USAGE: &str = "Use /cron add <schedule> <what to do> (a schedule is 30m, \"every 2h\", \"0 8 * * *\" or a \
                     time; quote it when it has spaces), /cron list, /cron edit <job> --schedule ... --prompt ..., \
                     or /cron pause|resume|run|remove <job>.";

/// Whether `job` was made in the chat `here`: a chat sees and manages only its own jobs (not
/// the API's, the agent's from other chats, or another chat's).
fn made_in(job: &hermes_store::cron::Job, here: &hermes_core::outbox::Destination) -> bool {
    job.origin.as_ref().is_some_and(|origin| origin.same_chat(here))
}

fn err(e: StoreError) -> IngestError {
    IngestError::new(e.to_string())
}

impl Gateway {
    /// The reply to a `/cron` command.
    pub(crate) async fn cron_command(&self, channel: &Channel, msg: &Incoming) -> Result<String, IngestError> {
        let rest = msg.text.trim_start().strip_prefix("/cron").unwrap_or_default();
        let Some(words) = shlex::split(rest) else {
            return Ok(format!("A quote is not closed. {USAGE}"));
        };
        let tenant = channel.tenant_id;
        let agent = Some(channel.agent_id);
        match words.first().map(String::as_str) {
            Some("add") => self.cron_add(channel, msg, &words[1..]).await,
            Some("list") | None => {
                let here = destination(channel, msg);
                let mut jobs = self.store.automation().list_jobs(tenant, agent).await.map_err(err)?;
                jobs.retain(|job| made_in(job, &here));
                if jobs.is_empty() {
                    return Ok("No cron jobs yet. /cron add 30m \"what to do\" makes one.".into());
                }
                let lines: Vec<String> = jobs
                    .iter()
                    .map(|j| {
                        let next = j
                            .next_run_at
                            .map_or_else(|| "-".to_owned(), |t| t.format("%Y-%m-%d %H:%M UTC").to_string());
                        format!("• {} ({}, {}): next {next}", j.name, j.schedule_display, j.state)
                    })
                    .collect();
                Ok(format!("Cron jobs:\n{}", lines.join("\n")))
            }
            Some("edit") => self.cron_edit(channel, msg, &words[1..]).await,
            Some(action @ ("pause" | "resume" | "run" | "remove")) => {
                let Some(reference) = words.get(1..).map(|w| w.join(" ")).filter(|r| !r.is_empty()) else {
                    return Ok(format!("Say which job: /cron {action} <id or name>."));
                };
                let job = match self.store.automation().find_job(tenant, agent, &reference).await {
                    Ok(job) if made_in(&job, &destination(channel, msg)) => job,
                    Ok(_) | Err(StoreError::NotFound) => {
                        return Ok(format!("There is no job “{reference}” in this chat. /cron list shows them."));
                    }
                    Err(StoreError::Invalid(why)) => return Ok(why),
                    Err(e) => return Err(err(e)),
                };
                let now = chrono::Utc::now();
                match action {
                    "pause" => {
                        self.store
                            .automation()
                            .set_job_state(tenant, job.id, Some("paused from chat"), None)
                            .await
                            .map_err(err)?;
                        Ok(format!("Paused “{}”.", job.name))
                    }
                    "resume" => {
                        let next = match hermes_schedule::resume_at(&job.schedule, &job.timezone, now) {
                            Ok(next) => next,
                            Err(e) => return Ok(format!("Cannot resume “{}”: {e}.", job.name)),
                        };
                        self.store.automation().set_job_state(tenant, job.id, None, Some(next)).await.map_err(err)?;
                        Ok(format!("Resumed “{}”; next run {}.", job.name, next.format("%Y-%m-%d %H:%M UTC")))
                    }
                    "run" => {
                        self.store.automation().set_job_state(tenant, job.id, None, Some(now)).await.map_err(err)?;
                        Ok(format!("Running “{}” now.", job.name))
                    }
                    _ => {
                        self.store.automation().delete_job(tenant, job.id).await.map_err(err)?;
                        Ok(format!("Removed “{}”.", job.name))
                    }
                }
            }
            _ => Ok(USAGE.into()),
        }
    }

    /// `/cron edit <job> [--schedule S] [--prompt P] [--name N] [--skill S]... [--deliver T]`.
    async fn cron_edit(&self, channel: &Channel, msg: &Incoming, words: &[String]) -> Result<String, IngestError> {
        let Some((reference, rest)) = words.split_first() else {
            return Ok("Use /cron edit <job> --schedule \"every 2h\" --prompt \"...\" (any of them).".into());
        };
        let tenant = channel.tenant_id;
        let job = match self.store.automation().find_job(tenant, Some(channel.agent_id), reference).await {
            Ok(job) if made_in(&job, &destination(channel, msg)) => job,
            Ok(_) | Err(StoreError::NotFound) => {
                return Ok(format!("There is no job “{reference}” in this chat. /cron list shows them."));
            }
            Err(StoreError::Invalid(why)) => return Ok(why),
            Err(e) => return Err(err(e)),
        };
        let mut changes = JobChanges::default();
        let mut args = rest.iter();
        while let Some(flag) = args.next() {
            let value = args.next().cloned();
            match (flag.as_str(), value) {
                ("--schedule", Some(v)) => {
                    let tz = self.store.conversations().session_policy(tenant).await.map_err(err)?.timezone;
                    match hermes_schedule::timing(&v, tz.name(), None, chrono::Utc::now()) {
                        Ok(t) => changes.timing = Some((&t).into()),
                        Err(e) => return Ok(format!("I cannot read that schedule: {e}.")),
                    }
                }
                ("--prompt", Some(v)) => {
                    if let Some(finding) = hermes_threats::scan_strict(&v).first() {
                        return Ok(format!("I won't schedule that: it looks like {}.", finding.reason));
                    }
                    changes.prompt = Some(v);
                }
                ("--name", Some(v)) => changes.name = Some(v),
                ("--deliver", Some(v)) => {
                    if let Err(e) = DeliveryTarget::list(&v) {
                        return Ok(format!("{e}."));
                    }
                    changes.deliver = Some(v);
                }
                ("--skill", Some(v)) => changes.skills.get_or_insert_with(Vec::new).push(v),
                (other, _) => {
                    return Ok(format!(
                        "I don't know {other:?} (or it has no value); use --schedule, --prompt, --name, --skill or --deliver."
                    ));
                }
            }
        }
        match self.store.automation().update_job(tenant, job.id, &changes).await {
            Ok(job) => Ok(format!("Updated “{}” ({}).", job.name, job.schedule_display)),
            Err(StoreError::Conflict(why)) => Ok(format!("{why}.")),
            Err(e) => Err(err(e)),
        }
    }

    async fn cron_add(&self, channel: &Channel, msg: &Incoming, words: &[String]) -> Result<String, IngestError> {
        let Some((schedule, rest)) = words.split_first() else { return Ok(USAGE.into()) };
        let (mut name, mut deliver, mut skills, mut prompt) = (None, None, Vec::new(), Vec::new());
        let mut args = rest.iter();
        while let Some(word) = args.next() {
            match word.as_str() {
                "--name" => name = args.next().cloned(),
                "--deliver" => deliver = args.next().cloned(),
                "--skill" => skills.extend(args.next().cloned()),
                _ => prompt.push(word.as_str()),
            }
        }
        let prompt = prompt.join(" ");
        if prompt.trim().is_empty() {
            return Ok(format!("Say what the job should do. {USAGE}"));
        }
        if let Some(finding) = hermes_threats::scan_strict(&prompt).first() {
            return Ok(format!("I won't schedule that: it looks like {}.", finding.reason));
        }
        if let Some(Err(e)) = deliver.as_deref().map(DeliveryTarget::list) {
            return Ok(format!("{e}."));
        }
        let tenant = channel.tenant_id;
        let tz = self.store.conversations().session_policy(tenant).await.map_err(err)?.timezone;
        let timing = match hermes_schedule::timing(schedule, tz.name(), None, chrono::Utc::now()) {
            Ok(t) => t,
            Err(e) => return Ok(format!("I cannot read that schedule: {e}.")),
        };
        let new = NewJob {
            agent_id: channel.agent_id,
            name: name.unwrap_or_else(|| prompt.chars().take(50).collect()),
            prompt,
            skills,
            model: None,
            toolsets: None,
            timing: (&timing).into(),
            deliver: deliver.unwrap_or_else(|| "origin".into()),
            origin: Some(destination(channel, msg)),
            script: Default::default(),
        };
        match self.store.automation().create_job(tenant, &new).await {
            Ok(job) => Ok(format!(
                "Scheduled “{}” ({}); first run {}.",
                job.name,
                job.schedule_display,
                timing.first_run.with_timezone(&timing.tz).format("%Y-%m-%d %H:%M %Z")
            )),
            Err(StoreError::Conflict(why)) => Ok(format!("{why}.")),
            Err(e) => Err(err(e)),
        }
    }
}
