//! A `database.url` naming several servers, as libpq takes it
//! (`postgres://u:p@db-0:5432,db-1:5432/hermes?target_session_attrs=read-write`): the store
//! works on whichever of them is the primary, and follows a promotion. sqlx connects to one
//! host only, so this finds the primary itself: at start, and whenever the one in use stops
//! answering as a primary (checked on a pooled connection every [`CHECK_EVERY`]), by asking
//! each server in turn whether it is in recovery. The pools then open their new connections there; connections to
//! the old primary fail and are dropped.
//!
//! Only `read-write` (or `primary`) targeting makes sense for the store, which writes; the
//! parameter is accepted and implied.

use std::time::Duration;

use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection};

use crate::walls::Pools;
use crate::{Result, StoreError};

/// How often the primary in use is checked.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// How long one server may take to say whether it is a primary.
const ASK_TIMEOUT: Duration = Duration::from_secs(2);

/// One URL per server of `url` when it names several (`None` when it names one).
pub(crate) fn split(url: &str) -> Option<Vec<String>> {
    let (scheme, rest) = url.split_once("://")?;
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => (format!("{userinfo}@"), hosts),
        None => (String::new(), authority),
    };
    if !hosts.contains(',') {
        return None;
    }
    let tail = without_target_session_attrs(tail);
    Some(hosts.split(',').filter(|h| !h.is_empty()).map(|host| format!("{scheme}://{userinfo}{host}{tail}")).collect())
}

/// `tail` (path and query) without `target_session_attrs`, which sqlx does not know.
fn without_target_session_attrs(tail: &str) -> String {
    let Some((path, query)) = tail.split_once('?') else { return tail.to_owned() };
    let kept: Vec<&str> = query.split('&').filter(|p| !p.starts_with("target_session_attrs=")).collect();
    if kept.is_empty() { path.to_owned() } else { format!("{path}?{}", kept.join("&")) }
}

/// The index of the first of `servers` that answers as a primary.
pub(crate) async fn find_primary(servers: &[PgConnectOptions]) -> Result<usize> {
    let mut why = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        match tokio::time::timeout(ASK_TIMEOUT, is_primary(server)).await {
            Ok(Ok(true)) => return Ok(i),
            Ok(Ok(false)) => why.push(format!("{}:{}: a standby", server.get_host(), server.get_port())),
            Ok(Err(e)) => why.push(format!("{}:{}: {e}", server.get_host(), server.get_port())),
            Err(_) => why.push(format!(
                "{}:{}: no answer within {} s",
                server.get_host(),
                server.get_port(),
                ASK_TIMEOUT.as_secs()
            )),
        }
    }
    Err(StoreError::Database(sqlx::Error::Configuration(
        format!("none of database.url's servers is a primary ({})", why.join("; ")).into(),
    )))
}

async fn is_primary(server: &PgConnectOptions) -> Result<bool> {
    let mut conn = PgConnection::connect_with(server).await?;
    let in_recovery: bool = sqlx::query_scalar("SELECT pg_is_in_recovery()").fetch_one(&mut conn).await?;
    conn.close().await?;
    Ok(!in_recovery)
}

/// Keeps `pools` on the primary among `servers`, starting from `current`. Runs for as long as
/// the process does.
pub(crate) async fn follow_primary(pools: Pools, servers: Vec<PgConnectOptions>, mut current: usize) {
    loop {
        tokio::time::sleep(CHECK_EVERY).await;
        // The steady case costs a pooled query, not a new connection a second.
        let still = tokio::time::timeout(ASK_TIMEOUT, pools.in_recovery()).await;
        if matches!(still, Ok(Ok(false))) {
            continue;
        }
        match find_primary(&servers).await {
            Ok(next) if next != current => {
                tracing::warn!(
                    from = %format_args!("{}:{}", servers[current].get_host(), servers[current].get_port()),
                    to = %format_args!("{}:{}", servers[next].get_host(), servers[next].get_port()),
                    "the database primary moved; following it"
                );
                pools.follow(&servers[next]);
                current = next;
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "no database primary yet"),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_url_naming_several_servers_becomes_one_url_per_server_with_the_rest_kept() {
        let urls =
            super::split("postgres://me:pw@db-0:5432,db-1:5433/hermes?target_session_attrs=read-write&sslmode=require");
        assert_eq!(
            urls.unwrap(),
            ["postgres://me:pw@db-0:5432/hermes?sslmode=require", "postgres://me:pw@db-1:5433/hermes?sslmode=require"]
        );
        assert_eq!(
            super::split("postgres://db-0,db-1/hermes?target_session_attrs=read-write").unwrap(),
            ["postgres://db-0/hermes", "postgres://db-1/hermes"]
        );
        assert_eq!(super::split("postgres://me@db-0:5432/hermes"), None, "one server: used as it is");
    }
}
