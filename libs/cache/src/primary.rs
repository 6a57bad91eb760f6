//! Which Redis the cache talks to: the one address of `redis.url`, or the primary that Redis
//! Sentinel names for a master (`redis+sentinel://[user:pass@]s1:26379,s2:26379/mymaster[/db]`,
//! the form redis-py and Celery read). With Sentinel, the primary in use is asked `ROLE` every
//! [`CHECK_EVERY`]; when it stops answering as a primary (dead, or demoted after a failover),
//! the sentinels are asked for the new one (redis-rs's `Sentinel`, which also checks that
//! server's role) and every new command goes there. Commands already sent to the old primary
//! fail, and their callers retry as they do across any Redis restart.
//!
//! The credentials and database in the URL are used for the sentinels and the data nodes
//! alike (Bitnami's chart gives both the same password).

use std::sync::{Arc, PoisonError, RwLock, Weak};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::sentinel::{Sentinel, SentinelNodeConnectionInfo};
use redis::{Client, IntoConnectionInfo, RedisConnectionInfo, RedisResult, Role};

/// How often the primary in use is asked whether it still is one.
const CHECK_EVERY: Duration = Duration::from_millis(500);
/// How long it may take to answer: a connection to a dead server waits out its reconnects.
const ANSWER_WITHIN: Duration = Duration::from_millis(500);
/// How long the sentinels may take to name the primary (each is tried in turn).
const LOOKUP_WITHIN: Duration = Duration::from_secs(3);

const SCHEME: &str = "redis+sentinel://";

/// The server every command goes to now, swapped when Sentinel names a new primary.
pub(crate) struct Current {
    node: RwLock<Node>,
}

#[derive(Clone)]
struct Node {
    client: Client,
    conn: ConnectionManager,
}

impl Current {
    /// Connects to `url`: one Redis, or the primary behind the sentinels it names (and then
    /// follows that primary for as long as the returned value lives).
    pub(crate) async fn connect(url: &str) -> RedisResult<Arc<Self>> {
        let Some(mut sentinels) = SentinelTarget::parse(url)? else {
            let client = Client::open(url)?;
            return Ok(Arc::new(Self::at(client).await?));
        };
        let client = sentinels.primary().await?;
        let conn = client.get_connection_manager_with_config(behind_sentinel()).await?;
        let current = Arc::new(Self { node: RwLock::new(Node { client, conn }) });
        hermes_telemetry::tasks::spawn("redis_follow_primary", follow(Arc::downgrade(&current), sentinels));
        Ok(current)
    }

    async fn at(client: Client) -> RedisResult<Self> {
        let conn = client.get_connection_manager().await?;
        Ok(Self { node: RwLock::new(Node { client, conn }) })
    }

    fn node(&self) -> Node {
        self.node.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The shared command connection to the current server.
    pub(crate) fn conn(&self) -> ConnectionManager {
        self.node().conn
    }

    /// A client of the current server, for connections of their own (pub/sub).
    pub(crate) fn client(&self) -> Client {
        self.node().client
    }

    fn replace(&self, node: Node) {
        *self.node.write().unwrap_or_else(PoisonError::into_inner) = node;
    }
}

/// A primary's connection gives up reconnecting after two quick tries (0.1 s, 0.2 s), not
/// redis-rs's six over 6 s: callers waiting on a dead primary fail soon and retry on the next.
fn behind_sentinel() -> ConnectionManagerConfig {
    ConnectionManagerConfig::new().set_number_of_retries(2)
}

/// A master name and the sentinels that know where its primary is.
struct SentinelTarget {
    sentinel: Sentinel,
    master: String,
    node: SentinelNodeConnectionInfo,
}

impl SentinelTarget {
    /// `None` when `url` is not a Sentinel URL.
    fn parse(url: &str) -> RedisResult<Option<Self>> {
        let Some((hosts, master, settings)) = parts(url)? else { return Ok(None) };
        Ok(Some(Self {
            sentinel: Sentinel::build(hosts)?,
            master,
            node: SentinelNodeConnectionInfo::default().set_redis_connection_info(settings),
        }))
    }

    /// A client of the server the sentinels name as the master's primary, once it says so.
    async fn primary(&mut self) -> RedisResult<Client> {
        let asked = self.sentinel.async_master_for(&self.master, Some(&self.node));
        tokio::time::timeout(LOOKUP_WITHIN, asked)
            .await
            .unwrap_or_else(|_| Err(invalid_io("the sentinels did not answer in time")))
    }
}

/// The sentinels' URLs, the master's name, and the credentials and database for its servers.
fn parts(url: &str) -> RedisResult<Option<(Vec<String>, String, RedisConnectionInfo)>> {
    let Some(rest) = url.strip_prefix(SCHEME) else { return Ok(None) };
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => (format!("{userinfo}@"), hosts),
        None => (String::new(), authority),
    };
    let mut segments = path.split('/').filter(|p| !p.is_empty());
    let Some(master) = segments.next() else {
        return Err(invalid("a redis+sentinel:// URL names the master after the hosts: .../mymaster"));
    };
    let db = segments.next().unwrap_or("0");
    let hosts: Vec<String> =
        hosts.split(',').filter(|h| !h.is_empty()).map(|h| format!("redis://{userinfo}{h}")).collect();
    let Some(first) = hosts.first() else {
        return Err(invalid("a redis+sentinel:// URL names at least one sentinel"));
    };
    // redis-rs reads the credentials and database (percent-decoded) as for any redis:// URL.
    let settings = format!("{first}/{db}").into_connection_info()?.redis_settings().clone();
    Ok(Some((hosts, master.to_owned(), settings)))
}

fn invalid(what: &'static str) -> redis::RedisError {
    redis::RedisError::from((redis::ErrorKind::InvalidClientConfig, what))
}

fn invalid_io(what: &'static str) -> redis::RedisError {
    redis::RedisError::from(std::io::Error::new(std::io::ErrorKind::TimedOut, what))
}

/// Keeps `current` on the master's primary until it is dropped.
async fn follow(current: Weak<Current>, mut sentinels: SentinelTarget) {
    let mut was_primary = true;
    loop {
        tokio::time::sleep(CHECK_EVERY).await;
        let Some(current) = current.upgrade() else { return };
        let mut conn = current.conn();
        let role = tokio::time::timeout(ANSWER_WITHIN, redis::cmd("ROLE").query_async::<Role>(&mut conn)).await;
        if matches!(role, Ok(Ok(Role::Primary { .. }))) {
            was_primary = true;
            continue;
        }
        match move_to_primary(&current, &mut sentinels).await {
            Ok(Some(addr)) => {
                tracing::warn!(master = %sentinels.master, primary = %addr, "redis primary moved; following it");
                metrics::counter!("hermes_redis_primary_switches_total").increment(1);
                was_primary = true;
            }
            Ok(None) => was_primary = true,
            // Logged once per outage, not every half second.
            Err(e) if was_primary => {
                tracing::warn!(master = %sentinels.master, error = %e, "redis primary lost; asking the sentinels");
                was_primary = false;
            }
            Err(_) => {}
        }
    }
}

/// Points `current` at the primary the sentinels name, when it is another server; returns
/// that server's address.
async fn move_to_primary(current: &Current, sentinels: &mut SentinelTarget) -> RedisResult<Option<String>> {
    let client = sentinels.primary().await?;
    let addr = client.get_connection_info().addr().to_string();
    if addr == current.client().get_connection_info().addr().to_string() {
        return Ok(None);
    }
    let conn = client.get_connection_manager_with_config(behind_sentinel()).await?;
    current.replace(Node { client, conn });
    Ok(Some(addr))
}

#[cfg(test)]
mod tests {
    use super::parts;

    #[test]
    fn a_sentinel_url_names_its_sentinels_master_credentials_and_database() {
        let (hosts, master, settings) = parts("redis+sentinel://:s%40cret@s1:26379,s2:26380/cache/3").unwrap().unwrap();
        assert_eq!(hosts, ["redis://:s%40cret@s1:26379", "redis://:s%40cret@s2:26380"]);
        assert_eq!(master, "cache");
        assert_eq!((settings.password(), settings.db()), (Some("s@cret"), 3), "decoded, for the data nodes too");
        let (_, _, plain) = parts("redis+sentinel://s1:26379/cache").unwrap().unwrap();
        assert_eq!((plain.password(), plain.db()), (None, 0));
        assert!(parts("redis://127.0.0.1:6379").unwrap().is_none(), "one address is not Sentinel");
        let missing = parts("redis+sentinel://s1:26379").err().unwrap();
        assert!(missing.to_string().contains("names the master"), "{missing}");
        let none = parts("redis+sentinel:///cache").err().unwrap();
        assert!(none.to_string().contains("at least one sentinel"), "{none}");
    }
}
