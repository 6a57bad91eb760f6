//! Background processes: started by one turn, polled, waited for, fed and killed by later
//! ones (on any worker: the state is here, in the sandbox). Each keeps the last 200,000 bytes
//! of its output; finished ones are written to the state directory, so they survive a
//! restart of the sandbox, and kept for 7 days, 64 at most. Only the session that started a
//! process sees it. One started with `pty` runs on a terminal ([`crate::pty`]): its input is
//! the terminal's keys, its output what the terminal shows.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_sandbox_proto::v1::{ProcessStatus, StartProcessRequest};
use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::Child;
use tokio::sync::watch;
use tokio::time::Instant;
use tonic::Status;

use crate::exec::{Spawned, kill_group, spawn_error, spawn_shell};
use crate::now_ms;

/// Output bytes kept per process.
pub const KEPT_OUTPUT: usize = 200_000;
/// Processes kept per sandbox, running or finished.
pub const MAX_PROCESSES: usize = 64;
/// How long a finished process stays readable.
pub const RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// A process's record, as kept and as persisted once it ends.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    id: String,
    owner: String,
    command: String,
    started_at_ms: i64,
    finished_at_ms: i64,
    exit_code: Option<i32>,
    signal: i32,
    /// It runs (ran) on a terminal.
    #[serde(default)]
    pty: bool,
    /// Bytes produced in all.
    total: u64,
    /// The kept tail (lossy UTF-8 when persisted).
    #[serde(with = "tail_text")]
    tail: VecDeque<u8>,
}

mod tail_text {
    use std::collections::VecDeque;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(tail: &VecDeque<u8>, s: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = tail.iter().copied().collect();
        s.serialize_str(&String::from_utf8_lossy(&bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<VecDeque<u8>, D::Error> {
        Ok(String::deserialize(d)?.into_bytes().into())
    }
}

/// Where a process's input goes: its stdin pipe, or the keys of its terminal.
struct Input {
    to: Box<dyn AsyncWrite + Send + Unpin>,
    on_terminal: bool,
}

impl Input {
    async fn send(&mut self, data: &[u8]) -> std::io::Result<()> {
        self.to.write_all(data).await?;
        self.to.flush().await
    }
}

/// A started process: the program, its output and its input.
type Started = (Child, Box<dyn AsyncRead + Send + Unpin>, Option<Input>);
/// A process's input, behind a lock of its own: a write that waits on a program that does not
/// read holds up nothing else of the process (its output, a kill, a list).
type SharedInput = Arc<tokio::sync::Mutex<Option<Input>>>;
/// How long one write may wait for the program to read.
const WRITE_TIME: Duration = Duration::from_secs(10);

fn start_program(req: &StartProcessRequest, workdir: &Path) -> std::io::Result<Started> {
    if req.pty {
        let crate::pty::OnTerminal { child, output, input } = crate::pty::spawn(&req.command, workdir, &req.env)?;
        return Ok((child, Box::new(output), Some(Input { to: Box::new(input), on_terminal: true })));
    }
    let Spawned { mut child, output } = spawn_shell(&req.command, workdir, &req.env, Stdio::piped())?;
    let stdin = child.stdin.take().map(|pipe| Input { to: Box::new(pipe), on_terminal: false });
    Ok((child, Box::new(output), stdin))
}

struct Entry {
    record: Record,
    running: bool,
    pid: Option<u32>,
    input: SharedInput,
    done: watch::Receiver<bool>,
    /// Where the last poll stopped.
    polled: u64,
}

/// The sandbox's background processes.
pub struct Processes {
    dir: PathBuf,
    workspace: PathBuf,
    entries: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Entry>>>>,
}

fn not_found() -> Status {
    Status::not_found("no such process in this session")
}

impl Processes {
    /// Loads the finished processes kept in `state_dir/processes`.
    pub fn load(state_dir: &Path, workspace: &Path) -> Self {
        let dir = state_dir.join("processes");
        let mut entries = HashMap::new();
        if let Ok(files) = std::fs::read_dir(&dir) {
            for file in files.flatten() {
                let record =
                    std::fs::read(file.path()).ok().and_then(|bytes| serde_json::from_slice::<Record>(&bytes).ok());
                match record {
                    Some(r) if !expired(&r) => {
                        let (_, done) = watch::channel(true);
                        let entry = Entry {
                            record: r,
                            running: false,
                            pid: None,
                            input: SharedInput::default(),
                            done,
                            polled: 0,
                        };
                        entries.insert(entry.record.id.clone(), Arc::new(tokio::sync::Mutex::new(entry)));
                    }
                    _ => {
                        let _ = std::fs::remove_file(file.path());
                    }
                }
            }
        }
        Self { dir, workspace: workspace.to_path_buf(), entries: Mutex::new(entries) }
    }

    fn get(&self, id: &str) -> Option<Arc<tokio::sync::Mutex<Entry>>> {
        self.entries.lock().ok()?.get(id).cloned()
    }

    /// Running processes, for the idle reaper.
    pub async fn running(&self) -> u32 {
        let all: Vec<_> = self.entries.lock().map(|m| m.values().cloned().collect()).unwrap_or_default();
        let mut n = 0;
        for e in all {
            if e.lock().await.running {
                n += 1;
            }
        }
        n
    }

    /// Makes room for one more: drops expired and then the oldest finished processes.
    async fn make_room(&self) -> Result<(), Status> {
        let all: Vec<_> = self.entries.lock().map(|m| m.values().cloned().collect()).unwrap_or_default();
        let mut finished = Vec::new();
        for e in &all {
            let e = e.lock().await;
            if !e.running {
                finished.push((e.record.finished_at_ms, e.record.id.clone(), expired(&e.record)));
            }
        }
        finished.sort();
        let mut count = all.len();
        for (_, id, is_expired) in finished {
            if count < MAX_PROCESSES && !is_expired {
                continue;
            }
            if let Ok(mut m) = self.entries.lock() {
                m.remove(&id);
            }
            let _ = std::fs::remove_file(self.dir.join(format!("{id}.json")));
            count -= 1;
        }
        if count >= MAX_PROCESSES {
            return Err(Status::resource_exhausted(format!("{MAX_PROCESSES} background processes are running")));
        }
        Ok(())
    }

    /// Starts a background process.
    pub async fn start(self: &Arc<Self>, req: StartProcessRequest) -> Result<ProcessStatus, Status> {
        self.make_room().await?;
        let workdir = crate::exec::start_dir(&self.workspace, &req.workdir);
        let (mut child, mut output, stdin) = start_program(&req, &workdir).map_err(|e| spawn_error(&e))?;
        let id = format!("proc_{:x}", now_ms()).chars().chain(random_suffix().chars()).collect::<String>();
        let (done_tx, done) = watch::channel(false);
        let entry = Entry {
            record: Record {
                id: id.clone(),
                owner: req.owner,
                command: req.command,
                started_at_ms: now_ms(),
                finished_at_ms: 0,
                exit_code: None,
                signal: 0,
                pty: req.pty,
                total: 0,
                tail: VecDeque::new(),
            },
            running: true,
            pid: child.id(),
            input: Arc::new(tokio::sync::Mutex::new(stdin)),
            done,
            polled: 0,
        };
        let status = to_status(&entry, 0, 0);
        let entry = Arc::new(tokio::sync::Mutex::new(entry));
        if let Ok(mut m) = self.entries.lock() {
            m.insert(id, entry.clone());
        }
        let me = self.clone();
        let on_terminal = req.pty;
        hermes_telemetry::tasks::spawn("sandboxd_process", async move {
            let status = follow(&entry, &mut child, &mut output, on_terminal).await;
            let mut e = entry.lock().await;
            use std::os::unix::process::ExitStatusExt;
            e.record.exit_code = status.and_then(|s| s.code());
            e.record.signal = status.and_then(|s| s.signal()).unwrap_or(0);
            e.record.finished_at_ms = now_ms();
            e.running = false;
            // A write still waiting ends by its own time limit and drops the input then.
            if let Ok(mut input) = e.input.try_lock() {
                *input = None;
            }
            me.persist(&e.record);
            let _ = done_tx.send(true);
        });
        Ok(status)
    }

    fn persist(&self, record: &Record) {
        let write = std::fs::create_dir_all(&self.dir).and_then(|()| {
            let json = serde_json::to_vec(record).map_err(std::io::Error::other)?;
            let tmp = self.dir.join(format!(".{}.tmp", record.id));
            std::fs::write(&tmp, json)?;
            std::fs::rename(&tmp, self.dir.join(format!("{}.json", record.id)))
        });
        if let Err(e) = write {
            tracing::warn!(error = %e, id = %record.id, "cannot keep the finished process");
        }
    }

    async fn owned(&self, id: &str, owner: &str) -> Result<Arc<tokio::sync::Mutex<Entry>>, Status> {
        let entry = self.get(id).ok_or_else(not_found)?;
        if entry.lock().await.record.owner != owner {
            return Err(not_found());
        }
        Ok(entry)
    }

    /// The session's processes, newest first, without output.
    pub async fn list(&self, owner: &str) -> Vec<ProcessStatus> {
        let all: Vec<_> = self.entries.lock().map(|m| m.values().cloned().collect()).unwrap_or_default();
        let mut out = Vec::new();
        for e in all {
            let e = e.lock().await;
            if e.record.owner == owner {
                out.push(to_status(&e, e.record.total, 0));
            }
        }
        out.sort_by_key(|p| std::cmp::Reverse(p.started_at_ms));
        out
    }

    /// Status and the output after `offset`, or after the previous poll (at most `limit`
    /// bytes; 0 = all kept).
    pub async fn poll(&self, id: &str, owner: &str, offset: Option<u64>, limit: u64) -> Result<ProcessStatus, Status> {
        let entry = self.owned(id, owner).await?;
        let mut e = entry.lock().await;
        let status = to_status(&e, offset.unwrap_or(e.polled), limit);
        // Only a poll "since the last" moves that mark: a reader at its own offset (the
        // worker's process watch) leaves the model's "new output" as it was.
        if offset.is_none() {
            e.polled = status.offset + status.output.len() as u64;
        }
        Ok(status)
    }

    /// Waits until the process ends or `timeout` passes; then its status and kept output.
    pub async fn wait(&self, id: &str, owner: &str, timeout: Duration) -> Result<ProcessStatus, Status> {
        let entry = self.owned(id, owner).await?;
        let mut done = entry.lock().await.done.clone();
        let _ = tokio::time::timeout(timeout, done.wait_for(|d| *d)).await;
        let e = entry.lock().await;
        Ok(to_status(&e, 0, 0))
    }

    /// Kills the process's whole group.
    pub async fn kill(&self, id: &str, owner: &str) -> Result<ProcessStatus, Status> {
        let entry = self.owned(id, owner).await?;
        let (pid, mut done) = {
            let e = entry.lock().await;
            (e.running.then_some(e.pid).flatten(), e.done.clone())
        };
        if let Some(leader) = pid {
            kill_group(pid, Signal::SIGKILL);
            if entry.lock().await.record.pty {
                crate::pty::hang_up(leader);
            }
            let _ = tokio::time::timeout(Duration::from_secs(5), done.wait_for(|d| *d)).await;
        }
        let e = entry.lock().await;
        Ok(to_status(&e, e.record.total, 0))
    }

    /// Writes to the process's input: `data`, then the Enter key when `submit`; then closes
    /// a pipe, or types the end-of-file key on a terminal, when `close`.
    pub async fn write(&self, id: &str, owner: &str, input: Keys<'_>) -> Result<ProcessStatus, Status> {
        let entry = self.owned(id, owner).await?;
        let ended = || Status::failed_precondition("the process has ended or its input is closed");
        let shared = {
            let e = entry.lock().await;
            if !e.running {
                return Err(ended());
            }
            e.input.clone()
        };
        let mut input_slot = shared.lock().await;
        let Some(stdin) = input_slot.as_mut() else { return Err(ended()) };
        let on_terminal = stdin.on_terminal;
        let mut bytes = input.data.to_vec();
        if input.submit {
            bytes.extend_from_slice(if on_terminal { crate::pty::ENTER } else { b"\n" });
        }
        if input.close && on_terminal {
            bytes.extend_from_slice(crate::pty::END_OF_FILE);
        }
        match tokio::time::timeout(WRITE_TIME, stdin.send(&bytes)).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => return Err(Status::failed_precondition(format!("cannot write: {err}"))),
            Err(_) => {
                return Err(Status::deadline_exceeded(format!(
                    "the program did not read its input within {} s",
                    WRITE_TIME.as_secs()
                )));
            }
        }
        if input.close && !on_terminal {
            *input_slot = None;
        }
        drop(input_slot);
        let e = entry.lock().await;
        Ok(to_status(&e, e.record.total, 0))
    }
}

/// What `write` sends.
pub struct Keys<'a> {
    pub data: &'a [u8],
    pub submit: bool,
    pub close: bool,
}

/// Reads the process's output into its entry until it ends; then its exit. A terminal's
/// session ends with its leader ([`crate::pty::hang_up`]), and its output is read on only for
/// [`crate::pty::DRAIN_AFTER_LEADER`] after that (a program that left the session may still
/// hold the terminal open).
async fn follow(
    entry: &tokio::sync::Mutex<Entry>,
    child: &mut Child,
    output: &mut (dyn AsyncRead + Send + Unpin),
    on_terminal: bool,
) -> Option<std::process::ExitStatus> {
    let mut buf = vec![0u8; 16 * 1024];
    let (mut leader, mut drain_until) = (None, None::<Instant>);
    loop {
        let until = drain_until;
        let drained = async move {
            match until {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            read = output.read(&mut buf) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let mut e = entry.lock().await;
                    e.record.total += n as u64;
                    e.record.tail.extend(&buf[..n]);
                    let excess = e.record.tail.len().saturating_sub(KEPT_OUTPUT);
                    e.record.tail.drain(..excess);
                }
            },
            status = child.wait(), if on_terminal && leader.is_none() => {
                leader = Some(status.ok());
                if let Some(pid) = entry.lock().await.pid {
                    crate::pty::hang_up(pid);
                }
                drain_until = Some(Instant::now() + crate::pty::DRAIN_AFTER_LEADER);
            }
            () = drained => break,
        }
    }
    match leader {
        Some(status) => status,
        None => child.wait().await.ok(),
    }
}

fn expired(r: &Record) -> bool {
    r.finished_at_ms > 0 && now_ms() - r.finished_at_ms > RETENTION.as_millis() as i64
}

fn random_suffix() -> String {
    use std::hash::{BuildHasher, RandomState};
    format!("{:04x}", RandomState::new().hash_one(now_ms()) & 0xffff)
}

fn to_status(e: &Entry, offset: u64, limit: u64) -> ProcessStatus {
    let r = &e.record;
    let kept_from = r.total.saturating_sub(r.tail.len() as u64);
    let start = offset.max(kept_from);
    let skip = usize::try_from(start - kept_from).unwrap_or(usize::MAX);
    let mut output: Vec<u8> = r.tail.iter().skip(skip).copied().collect();
    if limit > 0 {
        output.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    ProcessStatus {
        id: r.id.clone(),
        command: r.command.clone(),
        running: e.running,
        exit_code: r.exit_code,
        signal: r.signal,
        started_at_ms: r.started_at_ms,
        finished_at_ms: r.finished_at_ms,
        output_bytes: r.total,
        offset: start,
        output,
        output_dropped: offset < kept_from,
        pty: r.pty,
    }
}
