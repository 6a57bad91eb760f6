//! `hermesctl channel ...`: bind an agent to a chat bot. Creating a Telegram channel checks the
//! token with Telegram (`getMe`, which also gives the bot's name) and points the bot at us:
//! `setWebhook` with a fresh secret for webhook mode, `deleteWebhook` for long-poll mode.

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::json;

use hermes_chat::telegram::TelegramApi;
use hermes_config::HermesConfig;
use hermes_store::{ChannelAccess, NewChannel, PairingApproval, SecretBox, Store, StoreError};

use crate::commands::{print, tenant};

#[derive(Subcommand)]
pub enum ChannelCmd {
    /// Bind an agent to a chat bot.
    Create(Box<CreateChannel>),
    /// A tenant's channels.
    List {
        #[arg(long)]
        tenant: String,
    },
    /// Change who may talk to a bot (lists given replace the old ones).
    Update {
        #[arg(long)]
        tenant: String,
        id: uuid::Uuid,
        #[arg(long)]
        dm_policy: Option<String>,
        #[arg(long)]
        group_policy: Option<String>,
        #[arg(long = "allow")]
        allow: Vec<String>,
        #[arg(long = "allow-chat")]
        allow_chats: Vec<String>,
        #[arg(long = "admin")]
        admins: Vec<String>,
        /// What a message does while the agent still works: interrupt or queue.
        #[arg(long)]
        busy_mode: Option<String>,
    },
    /// Pairing codes people got from the bot.
    #[command(subcommand)]
    Pair(PairCmd),
    /// Unbind a bot.
    Delete {
        #[arg(long)]
        tenant: String,
        id: uuid::Uuid,
    },
}

#[derive(Subcommand)]
pub enum PairCmd {
    /// The codes waiting for an admin.
    List {
        #[arg(long)]
        tenant: String,
        channel: uuid::Uuid,
    },
    /// Let the person with this code talk to the bot.
    Approve {
        #[arg(long)]
        tenant: String,
        channel: uuid::Uuid,
        code: String,
    },
}

#[derive(Args)]
pub struct CreateChannel {
    #[arg(long)]
    tenant: String,
    /// The agent's name.
    #[arg(long)]
    agent: String,
    /// telegram (slack and wecom are not available yet).
    #[arg(long)]
    platform: String,
    /// The bot token (prefer --token-env: a command line is visible to other users).
    #[arg(long)]
    token: Option<String>,
    /// An environment variable holding the bot token.
    #[arg(long)]
    token_env: Option<String>,
    /// How updates arrive: poll (long-poll, the default) or webhook.
    #[arg(long, default_value = "poll")]
    mode: String,
    /// The platform API host (a self-hosted Bot API server, a test emulator).
    #[arg(long)]
    api_base: Option<String>,
    /// Webhook mode: the public base URL of the gateway (Telegram calls <URL>/telegram/<id>).
    #[arg(long)]
    public_url: Option<String>,
    /// open, allowlist, pairing or disabled.
    #[arg(long, default_value = "pairing")]
    dm_policy: String,
    /// mention (the default: answer when mentioned or replied to), open or disabled.
    #[arg(long, default_value = "mention")]
    group_policy: String,
    /// A user id allowed to talk to the bot (repeat for more).
    #[arg(long = "allow")]
    allow: Vec<String>,
    /// A group chat id the bot answers in (repeat; none means any group).
    #[arg(long = "allow-chat")]
    allow_chats: Vec<String>,
    /// A user id allowed to run admin commands (repeat).
    #[arg(long = "admin")]
    admins: Vec<String>,
}

pub async fn run_channel(json_mode: bool, config: &HermesConfig, store: &Store, cmd: ChannelCmd) -> anyhow::Result<()> {
    match cmd {
        ChannelCmd::Create(c) => create(json_mode, config, store, *c).await?,
        ChannelCmd::List { tenant: name } => {
            let t = tenant(store, &name).await?;
            let channels = store.list_channels(t.id).await?;
            let human = channels
                .iter()
                .map(|c| {
                    format!(
                        "{}\t{}\t{}\t@{}\t{}",
                        c.id,
                        c.platform,
                        c.mode,
                        c.bot_username.as_deref().unwrap_or("?"),
                        c.status
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            print(json_mode, json!(channels), human);
        }
        ChannelCmd::Update { tenant: name, id, dm_policy, group_policy, allow, allow_chats, admins, busy_mode } => {
            let t = tenant(store, &name).await?;
            let some = |v: Vec<String>| (!v.is_empty()).then_some(v);
            let access = ChannelAccess {
                dm_policy,
                group_policy,
                allow_users: some(allow),
                allow_chats: some(allow_chats),
                admins: some(admins),
                busy_mode,
            };
            let channel = match store.update_channel_access(t.id, id, &access).await {
                Ok(c) => c,
                Err(StoreError::NotFound) => bail!("tenant {name:?} has no channel {id}"),
                Err(e) => return Err(e.into()),
            };
            print(json_mode, json!(channel), format!("updated channel {id}"));
        }
        ChannelCmd::Pair(PairCmd::List { tenant: name, channel }) => {
            let t = tenant(store, &name).await?;
            let waiting = store.pending_pairings(t.id, channel).await?;
            let human = waiting
                .iter()
                .map(|p| {
                    format!(
                        "{}\t{}\t{}\texpires {}",
                        p.code,
                        p.user_id,
                        p.user_name.as_deref().unwrap_or("-"),
                        p.expires_at
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            print(json_mode, json!(waiting), human);
        }
        ChannelCmd::Pair(PairCmd::Approve { tenant: name, channel, code }) => {
            let t = tenant(store, &name).await?;
            let bound = store.channel(t.id, channel).await?;
            let approval = store.approve_pairing(t.id, channel, &code).await?;
            hermes_chat::announce_pairing(store, &bound, &approval).await?;
            match approval {
                PairingApproval::Approved { user_id, .. } => print(
                    json_mode,
                    json!({ "approved": true, "user_id": user_id }),
                    format!("approved user {user_id}"),
                ),
                PairingApproval::WrongCode => bail!("no such code is waiting (it may have expired)"),
                PairingApproval::Locked { until } => bail!("too many wrong codes: approvals are locked until {until}"),
            }
        }
        ChannelCmd::Delete { tenant: name, id } => {
            let t = tenant(store, &name).await?;
            if !store.delete_channel(t.id, id).await? {
                bail!("tenant {name:?} has no channel {id}");
            }
            print(json_mode, json!({ "id": id, "deleted": true }), format!("deleted channel {id}"));
        }
    }
    Ok(())
}

async fn create(json_mode: bool, config: &HermesConfig, store: &Store, c: CreateChannel) -> anyhow::Result<()> {
    if c.platform != "telegram" {
        bail!("platform {:?} is not available yet (telegram is)", c.platform);
    }
    if !matches!(c.mode.as_str(), "poll" | "webhook") {
        bail!("a Telegram channel's --mode is poll or webhook");
    }
    let t = tenant(store, &c.tenant).await?;
    let agent = match store.agent_by_name(t.id, &c.agent).await {
        Ok(a) => a,
        Err(StoreError::NotFound) => bail!("tenant {:?} has no agent named {:?}", c.tenant, c.agent),
        Err(e) => return Err(e.into()),
    };
    let token = match (&c.token, &c.token_env) {
        (Some(t), _) => t.clone(),
        (None, Some(var)) => std::env::var(var).with_context(|| format!("{var} (from --token-env) is not set"))?,
        (None, None) => bail!("give the bot token with --token-env VAR (or --token)"),
    };
    let api_base = c.api_base.clone().unwrap_or_else(|| "https://api.telegram.org".into());
    let http = reqwest::Client::builder().build()?;
    let api = TelegramApi::new(http, &api_base, &token);
    let username = api.get_me().await.context("Telegram refused the bot token (getMe)")?;
    let secrets = SecretBox::from_config(config.secrets.master_key.as_deref())?;
    let new = NewChannel {
        agent_id: agent.id,
        platform: c.platform.clone(),
        mode: c.mode.clone(),
        api_base,
        credentials: json!({ "token": token }),
        bot_identity: token.split(':').next().unwrap_or_default().to_owned(),
        dm_policy: c.dm_policy,
        group_policy: c.group_policy,
        allow_users: c.allow,
        allow_chats: c.allow_chats,
        admins: c.admins,
    };
    let mut channel = store.create_channel(t.id, new, secrets.as_ref()).await?;
    store.set_bot_username(t.id, channel.id, &username).await?;
    channel.bot_username = Some(username.clone());
    match c.mode.as_str() {
        "webhook" => {
            let Some(public) = c.public_url else {
                store.delete_channel(t.id, channel.id).await?;
                bail!("webhook mode needs --public-url (where Telegram can reach the gateway)");
            };
            let url = format!("{}/telegram/{}", public.trim_end_matches('/'), channel.id);
            api.set_webhook(&url, &channel.webhook_secret).await.context("Telegram refused the webhook")?;
        }
        _ => api.delete_webhook().await.context("cannot switch the bot to long-poll")?,
    }
    api.set_commands(&hermes_chat::COMMAND_MENU).await.context("cannot register the command menu")?;
    print(
        json_mode,
        json!(channel),
        format!("bound @{username} ({}) to agent {} as channel {}", c.platform, agent.name, channel.id),
    );
    Ok(())
}
