//! Job schedules as people write them (upstream's formats): `every 30m|2h|1d`, a 5- or 6-field
//! cron expression (seconds first when six; parsed by `croner`), an ISO timestamp (a one-shot;
//! without an offset it is read in the job's time zone), or a bare duration `30m` (a one-shot
//! at now + 30 minutes). Units: m/min/minutes, h/hr/hours, d/day/days. Cron expressions are
//! evaluated in the job's time zone, so "0 8 * * *" stays at 08:00 local across daylight-saving
//! changes. Also here: the catch-up rule for runs the scheduler finds late.

use std::str::FromStr;

use chrono::{DateTime, Duration, LocalResult, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

/// Longest interval or delay accepted.
const MAX_DAYS: i64 = 366;
/// How late a one-shot may still run.
pub const ONE_SHOT_GRACE: Duration = Duration::seconds(120);

/// A schedule that could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ScheduleError(String);

fn bad(why: impl Into<String>) -> ScheduleError {
    ScheduleError(why.into())
}

/// When a job runs.
#[derive(Debug, Clone)]
pub enum Schedule {
    /// Every `period`, from the last run.
    Every(Duration),
    /// Whenever the expression matches, in the job's time zone.
    Cron { expr: String, cron: Box<Cron> },
    /// Once, at this instant.
    Once(DateTime<Utc>),
}

/// A time zone by its IANA name (`Europe/Berlin`, `UTC`).
pub fn time_zone(name: &str) -> Result<Tz, ScheduleError> {
    Tz::from_str(name.trim())
        .map_err(|_| bad(format!("unknown time zone {name:?} (use an IANA name like Europe/Berlin)")))
}

/// A duration like `30m`, `2 h`, `1day`.
fn duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let n: i64 = number.parse().ok()?;
    let minutes = match unit.trim() {
        "m" | "min" | "mins" | "minute" | "minutes" => n,
        "h" | "hr" | "hrs" | "hour" | "hours" => n.checked_mul(60)?,
        "d" | "day" | "days" => n.checked_mul(24 * 60)?,
        _ => return None,
    };
    (minutes > 0 && minutes <= MAX_DAYS * 24 * 60).then(|| Duration::minutes(minutes))
}

/// How a duration is written back (`90m` stays minutes, `120m` becomes `2h`).
fn show(d: Duration) -> String {
    let m = d.num_minutes();
    if m % (24 * 60) == 0 {
        format!("{}d", m / (24 * 60))
    } else if m % 60 == 0 {
        format!("{}h", m / 60)
    } else {
        format!("{m}m")
    }
}

/// A wall-clock time in `tz`, refused if it never happens there (a daylight-saving gap); of a
/// time that happens twice, the first.
fn local(naive: NaiveDateTime, tz: Tz) -> Result<DateTime<Utc>, ScheduleError> {
    match tz.from_local_datetime(&naive) {
        LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => Ok(t.with_timezone(&Utc)),
        LocalResult::None => Err(bad(format!("{naive} does not exist in {tz} (the clocks skip it)"))),
    }
}

fn timestamp(text: &str, tz: Tz) -> Option<Result<DateTime<Utc>, ScheduleError>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(Ok(t.with_timezone(&Utc)));
    }
    const NAIVE: [&str; 4] = ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"];
    NAIVE.iter().find_map(|f| NaiveDateTime::parse_from_str(text, f).ok()).map(|naive| local(naive, tz))
}

fn cron(expr: &str) -> Result<Cron, ScheduleError> {
    let fields = expr.split_whitespace().count();
    if !(5..=6).contains(&fields) {
        return Err(bad(format!("a cron expression has 5 or 6 fields; {expr:?} has {fields}")));
    }
    let parser = CronParser::builder().seconds(Seconds::Optional).year(Year::Disallowed).build();
    parser.parse(expr).map_err(|e| bad(format!("cannot read the cron expression {expr:?}: {e}")))
}

impl Schedule {
    /// Reads `text` at `now`, naive timestamps in `tz`.
    pub fn parse(text: &str, now: DateTime<Utc>, tz: Tz) -> Result<Self, ScheduleError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(bad("give a schedule: every 30m, a cron expression, a time, or a delay like 30m"));
        }
        let lower = text.to_ascii_lowercase();
        if let Some(rest) = lower.strip_prefix("every ") {
            let period = duration(rest).ok_or_else(|| {
                bad(format!("cannot read the interval {rest:?}: use a number and m, h or d (every 30m, every 2h)"))
            })?;
            return Ok(Self::Every(period));
        }
        if let Some(delay) = duration(&lower) {
            return Ok(Self::Once(now + delay));
        }
        if let Some(at) = timestamp(text, tz) {
            return at.map(Self::Once);
        }
        let cron = cron(text)?;
        Ok(Self::Cron { expr: text.split_whitespace().collect::<Vec<_>>().join(" "), cron: Box::new(cron) })
    }

    /// `interval`, `cron` or `once`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Every(_) => "interval",
            Self::Cron { .. } => "cron",
            Self::Once(_) => "once",
        }
    }

    /// The schedule as it is stored: reading it again gives the same schedule at any time.
    pub fn spec(&self) -> String {
        match self {
            Self::Every(d) => format!("every {}", show(*d)),
            Self::Cron { expr, .. } => expr.clone(),
            Self::Once(at) => at.to_rfc3339(),
        }
    }

    /// For people: `every 2h`, `0 8 * * 1-5`, `once at 2026-12-01 08:00 Europe/Berlin`.
    pub fn display(&self, tz: Tz) -> String {
        match self {
            Self::Once(at) => format!("once at {} {tz}", at.with_timezone(&tz).format("%Y-%m-%d %H:%M")),
            other => other.spec(),
        }
    }

    pub fn is_recurring(&self) -> bool {
        !matches!(self, Self::Once(_))
    }

    /// The first run of a new (or resumed) job.
    pub fn first_run(&self, now: DateTime<Utc>, tz: Tz) -> Result<DateTime<Utc>, ScheduleError> {
        match self {
            Self::Once(at) => Ok(*at),
            _ => self.next_after(now, tz)?.ok_or_else(|| bad("the schedule never runs")),
        }
    }

    /// The run after one at `after` (none for a one-shot). An error means the next run cannot be
    /// computed (the job goes to `error`, never silently off).
    pub fn next_after(&self, after: DateTime<Utc>, tz: Tz) -> Result<Option<DateTime<Utc>>, ScheduleError> {
        match self {
            Self::Every(d) => Ok(Some(after + *d)),
            Self::Once(_) => Ok(None),
            Self::Cron { cron, expr } => {
                let local = after.with_timezone(&tz);
                cron.find_next_occurrence(&local, false)
                    .map(|t| Some(t.with_timezone(&Utc)))
                    .map_err(|e| bad(format!("no next run for {expr:?}: {e}")))
            }
        }
    }

    /// What to do with a run due at `due` that the scheduler sees at `now` (after downtime).
    pub fn catch_up(&self, due: DateTime<Utc>, now: DateTime<Utc>, tz: Tz) -> Catchup {
        let late = now - due;
        let grace = match self {
            Self::Once(_) => ONE_SHOT_GRACE,
            Self::Every(d) => half_period(*d),
            Self::Cron { .. } => match self.next_after(due, tz) {
                Ok(Some(next)) => half_period(next - due),
                _ => ONE_SHOT_GRACE,
            },
        };
        if late <= grace { Catchup::Run } else { Catchup::Skip }
    }
}

/// When a new (or re-scheduled) job runs: its schedule in its zone, its first run, and how
/// many runs it makes (a one-shot one, a recurring job forever unless `repeat` says).
#[derive(Debug, Clone)]
pub struct Timing {
    pub schedule: Schedule,
    pub tz: Tz,
    pub first_run: DateTime<Utc>,
    pub repeat: Option<i32>,
}

/// The timing of a job written as `schedule` in the zone `tz_name`, at `now`.
pub fn timing(schedule: &str, tz_name: &str, repeat: Option<i32>, now: DateTime<Utc>) -> Result<Timing, ScheduleError> {
    let tz = time_zone(tz_name)?;
    let schedule = Schedule::parse(schedule, now, tz)?;
    let first_run = schedule.first_run(now, tz)?;
    if !schedule.is_recurring() && first_run < now - ONE_SHOT_GRACE {
        return Err(bad(format!("{} is in the past", schedule.display(tz))));
    }
    let repeat = match (repeat, schedule.is_recurring()) {
        (Some(n), _) if n > 0 => Some(n),
        (_, false) => Some(1),
        _ => None,
    };
    Ok(Timing { schedule, tz, first_run, repeat })
}

/// When a paused job resumes: its next slot after `now` (a one-shot: its own time), with the
/// stored schedule read in the job's zone.
pub fn resume_at(spec: &str, tz_name: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, ScheduleError> {
    let tz = time_zone(tz_name)?;
    Schedule::parse(spec, now, tz)?.first_run(now, tz)
}

impl From<&Timing> for hermes_core::cron::JobTiming {
    fn from(t: &Timing) -> Self {
        Self {
            schedule: t.schedule.spec(),
            schedule_kind: t.schedule.kind().to_owned(),
            schedule_display: t.schedule.display(t.tz),
            timezone: t.tz.name().to_owned(),
            repeat_times: t.repeat,
            next_run_at: t.first_run,
        }
    }
}

/// Half a period, clamped to 120 s – 2 h (upstream's catch-up grace).
fn half_period(period: Duration) -> Duration {
    (period / 2).clamp(Duration::seconds(120), Duration::hours(2))
}

/// Whether a late run still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Catchup {
    /// Run it now (once, however many slots were missed).
    Run,
    /// Too late: skip to the next slot (a one-shot is missed).
    Skip,
}

#[cfg(test)]
mod tests;
