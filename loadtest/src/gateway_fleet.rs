//! The bots of `hermes-gateway-bench` on their emulated platform: Telegram bots long-polled on
//! one Telegram emulator, or Slack apps in Socket Mode, an emulated workspace each.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use hermes_core::{ChannelMode, Platform};
use hermes_testkit::slack::SlackEmulator;
use hermes_testkit::slack_socket::SocketHub;
use hermes_testkit::telegram::TelegramEmulator;

pub enum Fleet {
    Telegram(TelegramEmulator),
    Slack(Vec<(SlackEmulator, Arc<SocketHub>)>),
}

fn telegram_token(bot: usize) -> String {
    format!("{bot}:bench")
}

impl Fleet {
    pub async fn start(platform: Platform, bots: usize) -> std::io::Result<Self> {
        match platform {
            Platform::Slack => {
                let mut apps = Vec::with_capacity(bots);
                for i in 0..bots {
                    let slack = SlackEmulator::start(&format!("xoxb-{i}"), &format!("UBOT{i}")).await?;
                    let hub = slack.socket_mode(&format!("xapp-{i}"));
                    hub.quiet();
                    apps.push((slack, hub));
                }
                Ok(Self::Slack(apps))
            }
            _ => {
                let tg = TelegramEmulator::start().await?;
                tg.quiet();
                for i in 0..bots {
                    tg.add_bot(&telegram_token(i), &format!("bench{i}_bot"));
                }
                Ok(Self::Telegram(tg))
            }
        }
    }

    pub fn platform(&self) -> Platform {
        match self {
            Self::Telegram(_) => Platform::Telegram,
            Self::Slack(_) => Platform::Slack,
        }
    }

    pub fn mode(&self) -> ChannelMode {
        match self {
            Self::Telegram(_) => ChannelMode::Poll,
            Self::Slack(_) => ChannelMode::Socket,
        }
    }

    /// Bot `i`'s API base and credentials, as its channel binds them.
    pub fn binding(&self, i: usize) -> (String, Value) {
        match self {
            Self::Telegram(tg) => (tg.base_url(), json!({ "token": telegram_token(i) })),
            Self::Slack(apps) => {
                (apps[i].0.base_url(), json!({ "token": format!("xoxb-{i}"), "app_token": format!("xapp-{i}") }))
            }
        }
    }

    /// The pods' settings that let them reach the emulators on loopback.
    pub fn pod_settings(&self) -> Vec<(&'static str, String)> {
        match self {
            Self::Telegram(tg) => vec![("HERMES__PLATFORMS__TELEGRAM_API_BASE", tg.base_url())],
            // A workspace a port: loopback is trusted whatever the port.
            Self::Slack(_) => vec![("HERMES__OUTBOUND__TRUSTED_PRIVATE_HOSTS", "[\"127.0.0.1\"]".into())],
        }
    }

    /// Bots served now: polled since `since`, or with a socket open.
    pub fn served(&self, since: Instant) -> usize {
        match self {
            Self::Telegram(tg) => tg.polled_since(since),
            Self::Slack(apps) => apps.iter().filter(|(_, hub)| hub.connections().1 > 0).count(),
        }
    }

    /// User `n` writes to bot `i` in a direct chat (a new user, and so a new session, each).
    pub fn say(&self, i: usize, n: u64) {
        let text = format!("hi {n}");
        match self {
            Self::Telegram(tg) => {
                tg.user_says(&telegram_token(i), i64::try_from(n).unwrap_or(i64::MAX), &text);
            }
            Self::Slack(apps) => {
                let event = json!({ "type": "event_callback", "team_id": "T0BENCH", "event_id": format!("Ev{n}"),
                    "event": { "type": "message", "channel_type": "im", "user": format!("U{n}"),
                               "channel": format!("D{n}"), "ts": format!("1700000000.{n:06}"), "text": text } });
                apps[i].1.push("events_api", event);
            }
        }
    }

    /// How long each message taken in since the last call waited.
    pub fn take_pickups(&self) -> Vec<Duration> {
        match self {
            Self::Telegram(tg) => tg.take_pickups(),
            Self::Slack(apps) => apps.iter().flat_map(|(_, hub)| hub.take_pickups()).collect(),
        }
    }
}
