//! Worker presence: how the reaper tells a worker that died from one that is slow.
//!
//! A lease alone cannot: after a SIGKILL the dead worker's turns wait out the rest of their
//! lease (up to `worker.lease_seconds`) before anyone resumes them. So each worker process
//! also holds a session advisory lock, keyed by its lease prefix, on a connection of its own.
//! Postgres drops that lock the moment the process's connection closes, which the kernel does
//! as the process dies. The reaper tries the lock of each worker holding a running turn:
//! getting it means the worker is gone, and its turns are handed on at once
//! ([`release_turns_of_gone_workers`]).
//!
//! Every mistake here is on the slow side. A worker whose lock cannot be taken (two prefixes
//! hashing alike, a pooler that keeps server connections) is only ever judged by its lease.
//! A live worker judged gone (its presence connection lost in a Postgres restart) loses its
//! turns to fencing, not to a second writer: the new claim bumps `sessions.fence` and the old
//! worker's writes are refused. The scheduler confirms a gone worker on two passes before it
//! acts, which gives a worker whose connection dropped time to take its lock again.
//!
//! [`release_turns_of_gone_workers`]: crate::views::System::release_turns_of_gone_workers

use sqlx::{Connection, PgConnection};

use crate::{Result, Store, views::System};

/// The first key of every presence lock (the second is the hash of the lease prefix), so
/// presence locks never meet another use of advisory locks.
const PRESENCE_CLASS: i32 = 0x4845_524d; // "HERM"

/// A held presence lock, on the connection that holds it. Dropping it closes the connection
/// and so releases the lock.
pub struct Presence {
    conn: PgConnection,
}

impl Store {
    /// Takes the presence lock of the worker whose lease owners are `{prefix}/...`, on a
    /// connection of its own. `Ok(None)` when another connection holds it (the same prefix,
    /// or one that hashes alike): that worker is then judged only by its leases.
    pub async fn hold_presence(&self, prefix: &str) -> Result<Option<Presence>> {
        let mut conn = self.system_pool().acquire().await?.detach();
        let held: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, hashtext($2))")
            .bind(PRESENCE_CLASS)
            .bind(prefix)
            .fetch_one(&mut conn)
            .await?;
        if !held {
            conn.close().await?;
            return Ok(None);
        }
        Ok(Some(Presence { conn }))
    }
}

impl Presence {
    /// Proves the connection (and so the lock) still stands.
    pub async fn check(&mut self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&mut self.conn).await?;
        Ok(())
    }
}

impl System<'_> {
    /// The lease prefixes of workers that hold running turns whose leases have not run out,
    /// yet whose presence lock is free (gone, or not holding one), and the server that said so.
    pub async fn gone_workers(self) -> Result<GoneScan> {
        // A lease owner is `{worker}/{incarnation}/{claim}`: the lock is keyed by its prefix.
        // Owners of builds before presence (`{worker}/{claim}`, mid rolling upgrade) hold no
        // lock and are judged by their lease alone. The server is named by its address and
        // start: a promoted standby or a restarted primary is another one.
        Ok(sqlx::query_as(
            "SELECT concat_ws(' ', inet_server_addr(), inet_server_port(), pg_postmaster_start_time()) AS server,
                    COALESCE(array_agg(prefix ORDER BY prefix), '{}') AS workers
             FROM (
                SELECT DISTINCT regexp_replace(lease_owner, '/[^/]*$', '') AS prefix FROM turns
                WHERE status = 'running' AND lease_expires_at >= now() AND lease_owner LIKE '%/%/%'
             ) holders
             WHERE pg_try_advisory_xact_lock($1, hashtext(prefix))",
        )
        .bind(PRESENCE_CLASS)
        .fetch_one(self.system_pool())
        .await?)
    }

    /// Ends the leases of the running turns of `prefixes` whose presence lock is still free,
    /// marks them republished, and returns them with their lease owners. The lock is tried
    /// again in the same statement, so a worker that took its lock back since
    /// [`gone_workers`](Self::gone_workers) keeps its turns.
    pub async fn release_turns_of_gone_workers(self, prefixes: &[String]) -> Result<Vec<OrphanedTurn>> {
        if prefixes.is_empty() {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(
            "WITH held AS (
                SELECT id, regexp_replace(lease_owner, '/[^/]*$', '') AS prefix FROM turns
                WHERE status = 'running' AND lease_expires_at >= now() AND lease_owner LIKE '%/%/%'
             )
             UPDATE turns t SET lease_expires_at = now(), republished_at = now()
             FROM held
             WHERE t.id = held.id AND held.prefix = ANY($2) AND pg_try_advisory_xact_lock($1, hashtext(held.prefix))
             RETURNING t.tenant_id, t.session_id, t.id, t.lease_owner",
        )
        .bind(PRESENCE_CLASS)
        .bind(prefixes)
        .fetch_all(self.system_pool())
        .await?)
    }
}

/// What one look for gone workers found.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct GoneScan {
    /// The database server that was asked. Presence locks live on one server: when this
    /// changes (a failover, a restart), every lock went with the old one.
    pub server: String,
    /// Lease prefixes of the workers whose presence lock was free.
    pub workers: Vec<String>,
}

/// A running turn whose worker is gone, with the owner that held it (its session lock in
/// Redis carries the same owner).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct OrphanedTurn {
    #[sqlx(flatten)]
    pub turn: super::StrandedTurn,
    pub lease_owner: String,
}
