//! `hermesctl channel ...`: bind an agent to a chat bot. Creating one checks the credentials
//! with the platform and points a Telegram bot at us; binding, changing, unbinding and
//! approving are the use cases the APIs run too ([`hermes_ops::channels`]), recorded as the
//! operator's CLI.

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::json;

use hermes_config::HermesConfig;
use hermes_core::{BusyMode, ChannelMode, DmPolicy, GroupPolicy, GroupSessions, Platform};
use hermes_ops::channels::{self, Platforms};
use hermes_store::{Channel, SecretBox, Store, StoreError};
use hermes_wire::v1::{ChannelChanges, ChannelRequest};

use crate::audit_trail::cli_actor;
use crate::cli::{print, print_lines, tenant};

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
        id: hermes_core::ChannelId,
        /// open, allowlist, pairing or disabled.
        #[arg(long)]
        dm_policy: Option<DmPolicy>,
        /// mention, open or disabled.
        #[arg(long)]
        group_policy: Option<GroupPolicy>,
        #[command(flatten)]
        lists: AccessLists,
        /// What a message does while the agent still works: interrupt, queue or steer.
        #[arg(long)]
        busy_mode: Option<BusyMode>,
        /// Show answers as they are written (true or false; Telegram and Slack).
        #[arg(long)]
        streaming: Option<bool>,
        /// A group chat is one conversation (chat) or one per person in it (user).
        #[arg(long)]
        group_sessions: Option<GroupSessions>,
        /// A command (without the slash) only the admins may use; repeat (replaces the list).
        #[arg(long = "admin-command")]
        admin_commands: Vec<String>,
        /// Show the tools at work in one edited message (true or false; Telegram and Slack).
        #[arg(long)]
        tool_progress: Option<bool>,
        /// Show the model's reasoning above each answer (true or false).
        #[arg(long)]
        show_reasoning: Option<bool>,
        /// The chat (chat or chat:thread) deliveries to the bare platform go to; "" clears it.
        #[arg(long)]
        home_chat: Option<String>,
        /// Which toolsets each kind of chat may use, as JSON (`{}` lifts the rules):
        /// `{"groups": ["web", "memory"], "chats": {"C0TEAM": ["terminal", "web"]}}`.
        #[arg(long, value_parser = chat_toolsets)]
        toolsets: Option<hermes_core::audience::ChatToolsets>,
    },
    /// Pairing codes people got from the bot.
    #[command(subcommand)]
    Pair(PairCmd),
    /// Unbind a bot.
    Delete {
        #[arg(long)]
        tenant: String,
        id: hermes_core::ChannelId,
    },
}

#[derive(Subcommand)]
pub enum PairCmd {
    /// The codes waiting for an admin.
    List {
        #[arg(long)]
        tenant: String,
        channel: hermes_core::ChannelId,
    },
    /// Let the person with this code talk to the bot.
    Approve {
        #[arg(long)]
        tenant: String,
        channel: hermes_core::ChannelId,
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
    /// telegram, slack or wecom.
    #[arg(long)]
    platform: Platform,
    /// The bot token (prefer --token-env: a command line is visible to other users).
    #[arg(long)]
    token: Option<String>,
    /// An environment variable holding the bot token.
    #[arg(long)]
    token_env: Option<String>,
    /// WeCom: the company id, the app's agent id, its secret (or --secret-env) and the
    /// callback's EncodingAESKey; the callback Token goes in --token.
    #[arg(long)]
    corp_id: Option<String>,
    #[arg(long)]
    agent_id: Option<i64>,
    #[arg(long)]
    secret: Option<String>,
    #[arg(long)]
    secret_env: Option<String>,
    #[arg(long)]
    aes_key: Option<String>,
    /// Slack Socket Mode: the app-level token (xapp-…, or --app-token-env).
    #[arg(long)]
    app_token: Option<String>,
    #[arg(long)]
    app_token_env: Option<String>,
    /// WeCom AI bot (--mode websocket): its BotID; its secret goes in --secret.
    #[arg(long)]
    bot_id: Option<String>,
    /// Slack: the app's signing secret (or --signing-secret-env).
    #[arg(long)]
    signing_secret: Option<String>,
    #[arg(long)]
    signing_secret_env: Option<String>,
    /// How updates arrive: Telegram poll (the default) or webhook; Slack webhook (Events API,
    /// the default) or socket (Socket Mode); WeCom webhook (an app's callback, the default) or
    /// websocket (an AI bot's long connection).
    #[arg(long)]
    mode: Option<ChannelMode>,
    /// The platform API host (a self-hosted Bot API server, a test emulator); default: the
    /// configuration's `platforms.*`. An operator setting: tenants cannot choose it.
    #[arg(long)]
    api_base: Option<String>,
    /// Webhook mode: the public base URL of the gateway (Telegram calls <URL>/telegram/<id>).
    #[arg(long)]
    public_url: Option<String>,
    /// open, allowlist, pairing or disabled.
    #[arg(long, default_value = "pairing")]
    dm_policy: DmPolicy,
    /// mention (the default: answer when mentioned or replied to), open or disabled.
    #[arg(long, default_value = "mention")]
    group_policy: GroupPolicy,
    #[command(flatten)]
    lists: AccessLists,
}

/// Who may talk to a bot and run its admin commands.
#[derive(Args)]
pub struct AccessLists {
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
        ChannelCmd::List { tenant: name } => list(json_mode, store, &name).await?,
        ChannelCmd::Update {
            tenant: name,
            id,
            dm_policy,
            group_policy,
            lists: AccessLists { allow, allow_chats, admins },
            busy_mode,
            streaming,
            group_sessions,
            admin_commands,
            tool_progress,
            show_reasoning,
            home_chat,
            toolsets,
        } => {
            let some = |v: Vec<String>| (!v.is_empty()).then_some(v);
            let changes = ChannelChanges {
                dm_policy: dm_policy.map(|v| v.to_string()),
                group_policy: group_policy.map(|v| v.to_string()),
                allow_users: some(allow),
                allow_chats: some(allow_chats),
                admins: some(admins),
                busy_mode: busy_mode.map(|v| v.to_string()),
                streaming,
                group_sessions: group_sessions.map(|v| v.to_string()),
                admin_commands: some(admin_commands),
                tool_progress,
                show_reasoning,
                home_chat,
                toolsets,
            };
            update(json_mode, store, &name, id, changes).await?;
        }
        ChannelCmd::Pair(PairCmd::List { tenant: name, channel }) => pairings(json_mode, store, &name, channel).await?,
        ChannelCmd::Pair(PairCmd::Approve { tenant: name, channel, code }) => {
            approve(json_mode, store, &name, channel, &code).await?;
        }
        ChannelCmd::Delete { tenant: name, id } => delete(json_mode, store, &name, id).await?,
    }
    Ok(())
}

/// `--toolsets` as given.
fn chat_toolsets(text: &str) -> Result<hermes_core::audience::ChatToolsets, String> {
    serde_json::from_str(text).map_err(|e| format!("not a toolset rule ({e}); e.g. {{\"groups\": [\"web\"]}}"))
}

/// `channel list`.
async fn list(json_mode: bool, store: &Store, name: &str) -> anyhow::Result<()> {
    let t = tenant(store, name).await?;
    let channels = store.chat().list_channels(t.id).await?;
    print_lines(json_mode, &channels, |c| {
        let bot = c.bot_username.as_deref().unwrap_or("?");
        format!("{}\t{}\t{}\t@{bot}\t{}", c.id, c.platform, c.mode, c.status)
    });
    Ok(())
}

/// The tenant's channel `id`.
async fn owned(store: &Store, name: &str, id: hermes_core::ChannelId) -> anyhow::Result<Channel> {
    let t = tenant(store, name).await?;
    match store.chat().channel(t.id, id).await {
        Ok(c) => Ok(c),
        Err(StoreError::NotFound) => bail!("tenant {name:?} has no channel {id}"),
        Err(e) => Err(e.into()),
    }
}

/// `channel update`: `changes` replaces what it gives.
async fn update(
    json_mode: bool,
    store: &Store,
    name: &str,
    id: hermes_core::ChannelId,
    changes: ChannelChanges,
) -> anyhow::Result<()> {
    let channel = owned(store, name, id).await?;
    let changed = channels::change(store, cli_actor(), &channel, changes).await?;
    print(json_mode, json!(changed), format!("updated channel {id}"));
    Ok(())
}

/// `channel pair list`.
async fn pairings(json_mode: bool, store: &Store, name: &str, channel: hermes_core::ChannelId) -> anyhow::Result<()> {
    let t = tenant(store, name).await?;
    let waiting = store.chat().pending_pairings(t.id, channel).await?;
    print_lines(json_mode, &waiting, |p| {
        let name = p.user_name.as_deref().unwrap_or("-");
        format!("{}\t{}\t{name}\texpires {}", p.code, p.user_id, p.expires_at)
    });
    Ok(())
}

/// `channel pair approve`: the person is told in their chat.
async fn approve(
    json_mode: bool,
    store: &Store,
    name: &str,
    channel: hermes_core::ChannelId,
    code: &str,
) -> anyhow::Result<()> {
    let bound = owned(store, name, channel).await?;
    let approved = channels::approve_pairing(store, cli_actor(), &bound, code).await?;
    let user_id = &approved.user_id;
    print(json_mode, json!(approved), format!("approved user {user_id}"));
    Ok(())
}

/// `channel delete`.
async fn delete(json_mode: bool, store: &Store, name: &str, id: hermes_core::ChannelId) -> anyhow::Result<()> {
    let channel = owned(store, name, id).await?;
    channels::unbind(store, cli_actor(), &channel).await?;
    print(json_mode, json!({ "id": id, "deleted": true }), format!("deleted channel {id}"));
    Ok(())
}

/// A value given directly or through an environment variable.
fn given(value: &Option<String>, env: &Option<String>, what: &str) -> anyhow::Result<String> {
    match (value, env) {
        (Some(v), _) => Ok(v.clone()),
        (None, Some(var)) => std::env::var(var).with_context(|| format!("{var} (the {what}) is not set")),
        (None, None) => bail!("give the {what}"),
    }
}

/// `channel create`: the bot as the APIs bind it, on the platform host the operator gives.
async fn create(json_mode: bool, config: &HermesConfig, store: &Store, c: CreateChannel) -> anyhow::Result<()> {
    let t = tenant(store, &c.tenant).await?;
    let agent = match store.agents().agent_by_name(t.id, &c.agent).await {
        Ok(a) => a,
        Err(StoreError::NotFound) => bail!("tenant {:?} has no agent named {:?}", c.tenant, c.agent),
        Err(e) => return Err(e.into()),
    };
    let optional = |value: &Option<String>, env: &Option<String>, what: &str| -> anyhow::Result<Option<String>> {
        Ok(if value.is_some() || env.is_some() { Some(given(value, env, what)?) } else { None })
    };
    let request = ChannelRequest {
        agent: agent.name.clone(),
        platform: c.platform.to_string(),
        mode: c.mode.map(|m| m.to_string()),
        token: optional(&c.token, &c.token_env, "bot token")?,
        signing_secret: optional(&c.signing_secret, &c.signing_secret_env, "signing secret")?,
        app_token: optional(&c.app_token, &c.app_token_env, "app-level token")?,
        corp_id: c.corp_id.clone(),
        wecom_agent_id: c.agent_id,
        secret: optional(&c.secret, &c.secret_env, "secret")?,
        aes_key: c.aes_key.clone(),
        bot_id: c.bot_id.clone(),
        public_url: c.public_url.clone(),
        dm_policy: Some(c.dm_policy.to_string()),
        group_policy: Some(c.group_policy.to_string()),
        allow_users: c.lists.allow,
        allow_chats: c.lists.allow_chats,
        admins: c.lists.admins,
    };
    // The operator chose this base: it is trusted like the configured ones.
    let mut trusted = config.outbound.trusted(&config.platforms);
    trusted.extend(c.api_base.as_deref().and_then(|b| reqwest::Url::parse(b).ok()).and_then(|u| {
        let host = u.host_str()?.to_owned();
        Some(u.port().map_or(host.clone(), |p| format!("{host}:{p}")))
    }));
    let policy = std::sync::Arc::new(hermes_net_policy::outbound::Policy::trusting(trusted));
    let http = hermes_net_policy::outbound::builder(policy).timeout(std::time::Duration::from_secs(30)).build()?;
    let secrets = SecretBox::from_config(config.secrets.master_key.as_deref())?;
    let platforms =
        Platforms { http: &http, secrets: secrets.as_ref(), bases: &config.platforms, api_base: c.api_base.as_deref() };
    let bound = channels::bind(&platforms, store, cli_actor(), (t.id, agent.id), request).await?;
    let username = bound.channel.bot_username.as_deref().unwrap_or("?");
    let hint = if bound.setup.is_empty() { String::new() } else { format!("\n{}", bound.setup) };
    let human =
        format!("bound {username} ({}) to agent {} as channel {}{hint}", c.platform, agent.name, bound.channel.id);
    print(json_mode, json!(bound), human);
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::commands::{Cli, Command};

    fn create(args: &[&str]) -> Result<CreateChannel, clap::Error> {
        let base = ["hermesctl", "channel", "create", "--tenant", "acme", "--agent", "helper"];
        match Cli::try_parse_from(base.iter().chain(args))?.command {
            Command::Channel(ChannelCmd::Create(c)) => Ok(*c),
            _ => panic!("not a channel create"),
        }
    }

    #[test]
    fn the_platform_and_mode_are_parsed_by_name_and_an_unknown_one_is_refused() {
        let c = create(&["--platform", "slack", "--mode", "socket"]).unwrap();
        assert_eq!((c.platform, c.mode), (Platform::Slack, Some(ChannelMode::Socket)));
        let err = create(&["--platform", "signal"]).err().unwrap().to_string();
        assert!(err.contains("unknown platform `signal` (expected one of: telegram, slack, wecom)"), "{err}");
        assert!(create(&["--platform", "telegram", "--mode", "carrier-pigeon"]).is_err());
    }
}
