//! Binding an agent to a bot, as `hermesctl channel create` and the admin API both do it: the
//! credentials each platform and mode needs are checked with the platform first (Telegram
//! `getMe`, Slack `auth.test` and `apps.connections.open`, WeCom `gettoken` or the AI-bot
//! subscription), which also gives the bot's name; once stored, a Telegram bot is pointed at us.

use hermes_core::{ChannelMode, Platform};
use serde_json::{Value, json};

use crate::slack::SlackApi;
use crate::telegram::TelegramApi;

/// What the admin gives to bind a bot.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct BindRequest {
    pub platform: Platform,
    /// Each platform has its default (Telegram long-polls, the others take webhooks).
    pub mode: Option<ChannelMode>,
    /// The bot token (Telegram, Slack `xoxb-`), or the WeCom callback Token.
    pub token: Option<String>,
    pub signing_secret: Option<String>,
    /// Slack's app-level token (`xapp-`), for Socket Mode.
    pub app_token: Option<String>,
    pub corp_id: Option<String>,
    pub agent_id: Option<i64>,
    /// The WeCom app secret, or the AI bot's secret.
    pub secret: Option<String>,
    pub aes_key: Option<String>,
    /// The WeCom AI bot's BotID.
    pub bot_id: Option<String>,
    pub api_base: Option<String>,
}

/// A bot the platform accepted, ready to be stored.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub platform: Platform,
    pub mode: ChannelMode,
    pub api_base: String,
    pub credentials: Value,
    /// What makes the bot unique in the installation.
    pub identity: String,
    pub username: String,
}

#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// The request itself is wrong (a missing field, a mode the platform has not).
    #[error("{0}")]
    Invalid(String),
    /// The platform refused the credentials or could not be reached.
    #[error("{0}")]
    Platform(String),
}

fn need(value: &Option<String>, what: &str) -> Result<String, BindError> {
    value.clone().filter(|v| !v.is_empty()).ok_or_else(|| BindError::Invalid(format!("give the {what}")))
}

fn refused(what: &str) -> impl Fn(&dyn std::fmt::Display) -> BindError + '_ {
    move |e| BindError::Platform(format!("{what}: {e}"))
}

/// Checks a bot with its platform.
pub async fn prepare(http: &reqwest::Client, req: &BindRequest) -> Result<Prepared, BindError> {
    let platform = req.platform;
    let default_mode = match platform {
        Platform::Telegram => ChannelMode::Poll,
        Platform::Slack | Platform::Wecom => ChannelMode::Webhook,
    };
    let mode = req.mode.unwrap_or(default_mode);
    match (platform, mode) {
        (Platform::Telegram, ChannelMode::Poll | ChannelMode::Webhook) => check_telegram(http, req, mode).await,
        (Platform::Slack, ChannelMode::Webhook | ChannelMode::Socket) => check_slack(http, req, mode).await,
        (Platform::Wecom, ChannelMode::Webhook) => check_wecom_app(http, req, mode).await,
        (Platform::Wecom, ChannelMode::Websocket) => check_wecom_bot(req, mode).await,
        (_, mode) => Err(BindError::Invalid(format!(
            "{platform} has no \"{mode}\" mode (telegram: poll|webhook, slack: webhook|socket, wecom: webhook|websocket)"
        ))),
    }
}

/// The API base the request gives, or the platform's.
fn base(req: &BindRequest, default: &str) -> String {
    req.api_base.clone().unwrap_or_else(|| default.to_owned())
}

/// A Telegram bot, checked with `getMe`; its token's numeric part identifies it.
async fn check_telegram(http: &reqwest::Client, req: &BindRequest, mode: ChannelMode) -> Result<Prepared, BindError> {
    let token = need(&req.token, "bot token")?;
    let api_base = base(req, "https://api.telegram.org");
    let api = TelegramApi::new(http.clone(), &api_base, &token);
    let username = api.get_me().await.map_err(|e| refused("Telegram refused the bot token (getMe)")(&e))?;
    let identity = token.split(':').next().unwrap_or_default().to_owned();
    Ok(Prepared { platform: req.platform, mode, api_base, credentials: json!({ "token": token }), identity, username })
}

/// A Slack app: its signing secret for webhooks, or its app-level token (checked by opening
/// a socket) for Socket Mode; the bot token is checked with `auth.test`.
async fn check_slack(http: &reqwest::Client, req: &BindRequest, mode: ChannelMode) -> Result<Prepared, BindError> {
    let token = need(&req.token, "bot token (xoxb-…)")?;
    let api_base = base(req, "https://slack.com/api");
    let mut credentials = json!({ "token": token });
    if mode == ChannelMode::Webhook {
        credentials["signing_secret"] = json!(need(&req.signing_secret, "signing secret")?);
    } else {
        let app_token = need(&req.app_token, "app-level token (xapp-…, scope connections:write)")?;
        SlackApi::new(http.clone(), &api_base, &app_token)
            .open_socket()
            .await
            .map_err(|e| refused("Slack refused the app-level token (apps.connections.open)")(&e))?;
        credentials["app_token"] = json!(app_token);
    }
    let api = SlackApi::new(http.clone(), &api_base, &token);
    let (bot_user, team) = api.auth_test().await.map_err(|e| refused("Slack refused the bot token (auth.test)")(&e))?;
    Ok(Prepared {
        platform: req.platform,
        mode,
        api_base,
        credentials,
        identity: format!("{team}:{bot_user}"),
        username: bot_user,
    })
}

/// A WeCom app taking webhooks: its callback keys must be usable and `gettoken` must take
/// its company id and secret.
async fn check_wecom_app(http: &reqwest::Client, req: &BindRequest, mode: ChannelMode) -> Result<Prepared, BindError> {
    let corp = need(&req.corp_id, "company id (corp_id)")?;
    let agent_id = req.agent_id.ok_or_else(|| BindError::Invalid("give the app's agent_id".into()))?;
    let secret = need(&req.secret, "app secret")?;
    let token = need(&req.token, "callback Token")?;
    let aes_key = need(&req.aes_key, "callback EncodingAESKey")?;
    crate::wecom::WecomCrypt::new(&token, &aes_key, &corp)
        .map_err(|e| BindError::Invalid(format!("the callback keys are not usable: {e}")))?;
    let api_base = base(req, "https://qyapi.weixin.qq.com");
    let api = crate::wecom::WecomApi::new(http.clone(), &api_base, &corp, &secret, agent_id);
    api.check().await.map_err(|e| refused("WeCom refused the company id or secret (gettoken)")(&e))?;
    let credentials =
        json!({ "corp_id": corp, "agent_id": agent_id, "secret": secret, "token": token, "aes_key": aes_key });
    Ok(Prepared {
        platform: req.platform,
        mode,
        api_base,
        credentials,
        identity: format!("{corp}:{agent_id}"),
        username: agent_id.to_string(),
    })
}

/// A WeCom AI bot over its websocket, checked by subscribing once.
async fn check_wecom_bot(req: &BindRequest, mode: ChannelMode) -> Result<Prepared, BindError> {
    let bot_id = need(&req.bot_id, "AI bot's BotID")?;
    let secret = need(&req.secret, "AI bot's secret")?;
    let api_base = base(req, crate::wecom_bot::DEFAULT_URL);
    let socket = crate::wecom_bot::BotSocket::subscribe(&api_base, &bot_id, &secret)
        .await
        .map_err(|e| refused("WeCom refused the AI bot's id or secret (aibot_subscribe)")(&e))?;
    socket.close().await;
    let credentials = json!({ "bot_id": bot_id, "secret": secret });
    Ok(Prepared {
        platform: req.platform,
        mode,
        api_base,
        credentials,
        identity: format!("aibot:{bot_id}"),
        username: bot_id,
    })
}

/// After the channel is stored: points a Telegram bot at us (its webhook, or none for
/// long-poll) and registers the command menu. Returns what the admin still has to set up on
/// the platform's side.
pub async fn activate(
    http: &reqwest::Client,
    prepared: &Prepared,
    channel_id: hermes_core::ChannelId,
    webhook_secret: &str,
    public_url: Option<&str>,
) -> Result<String, BindError> {
    let public = public_url.map(|p| p.trim_end_matches('/').to_owned());
    let shown = public.clone().unwrap_or_else(|| "https://<gateway host>".into());
    match (prepared.platform, prepared.mode) {
        (Platform::Telegram, mode) => {
            let token = prepared.credentials["token"].as_str().unwrap_or_default();
            let api = TelegramApi::new(http.clone(), &prepared.api_base, token);
            if mode == ChannelMode::Webhook {
                let public = public.ok_or_else(|| {
                    BindError::Invalid("webhook mode needs a public URL (where Telegram can reach the gateway)".into())
                })?;
                let url = format!("{public}/telegram/{channel_id}");
                api.set_webhook(&url, webhook_secret).await.map_err(|e| refused("Telegram refused the webhook")(&e))?;
            } else {
                api.delete_webhook().await.map_err(|e| refused("cannot switch the bot to long-poll")(&e))?;
            }
            // The menu is a nicety: a Bot-API-compatible server without `setMyCommands` still
            // carries the bot, so its refusal is a warning, not a failed binding.
            let menu: Vec<_> = hermes_core::commands::menu().collect();
            match api.set_commands(&menu).await {
                Ok(()) => Ok(String::new()),
                Err(e) => {
                    tracing::warn!(error = %e, "the platform refused the command menu; the bot works without it");
                    Ok(format!("The bot works, but its command menu could not be registered ({e})."))
                }
            }
        }
        (Platform::Wecom, ChannelMode::Websocket) => {
            Ok("The gateway connects to WeCom itself; nothing to set up.".into())
        }
        (Platform::Wecom, _) => {
            Ok(format!("In the WeCom app's API receiving settings, set the URL to {shown}/wecom/{channel_id}."))
        }
        (Platform::Slack, ChannelMode::Socket) => {
            Ok("The gateway connects to Slack itself (Socket Mode): subscribe the app to app_mention and message.im, \
             and add a /hermes slash command."
                .into())
        }
        (Platform::Slack, _) => Ok(format!(
            "In the Slack app's settings, set the Event Subscriptions request URL to {shown}/slack/{channel_id}/events \
             (events: app_mention, message.im), the Interactivity request URL to {shown}/slack/{channel_id}/interactive \
             and a /hermes slash command to {shown}/slack/{channel_id}/commands."
        )),
    }
}
