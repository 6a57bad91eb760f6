//! Where an unattended run's answer goes (a cron job's or a webhook's `deliver`): the chats of
//! its list (`origin`, `all` the home chats of the agent's bots, `platform[:chat[:thread]]`
//! with a bare platform meaning its home chat;
//! `local` and targets with no active channel add none), each once, labelled with what ran
//! (the chat shows the label's name above the answer). The first chat is the turn's
//! `reply_to`; the others ride in its `also` (migration 0029).

use hermes_core::outbox::{DeliveryTarget, Destination, RunLabel};
use hermes_core::{AgentId, TenantId};

use crate::{Result, views::Automation};

impl Automation<'_> {
    /// The `reply_to` of a run delivering to `deliver`; `None` when it delivers to no chat.
    pub async fn delivery_targets(
        self,
        tenant: TenantId,
        agent: AgentId,
        deliver: &str,
        origin: Option<&Destination>,
        label: &RunLabel,
    ) -> Result<Option<Destination>> {
        let mut chats: Vec<Destination> = Vec::new();
        let mut channels = None;
        for item in deliver.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            // Lists are checked when they are written; one stored before that names nothing.
            let Ok(target) = item.parse::<DeliveryTarget>() else {
                tracing::warn!(target = item, "an unknown delivery target");
                continue;
            };
            if matches!(target, DeliveryTarget::Chat { .. } | DeliveryTarget::All) && channels.is_none() {
                channels = Some(self.chat().list_channels(tenant).await?);
            }
            let all = channels.as_deref().unwrap_or_default();
            let dest = match target {
                DeliveryTarget::Local => continue,
                DeliveryTarget::Origin => match origin {
                    Some(origin) => origin.alone(),
                    None => continue,
                },
                DeliveryTarget::All => {
                    for dest in home_chats(all, agent) {
                        if !chats.iter().any(|d| d.same_chat(&dest)) {
                            chats.push(dest);
                        }
                    }
                    continue;
                }
                DeliveryTarget::Chat { platform, mut chat, mut thread } => {
                    // A bare platform means its home chat (/sethome).
                    let Some(channel) = crate::channels::pick_channel(all, platform, agent, chat.is_none()) else {
                        tracing::warn!(target = item, "no active channel (or home chat) for a delivery target");
                        continue;
                    };
                    if chat.is_none()
                        && let Some(home) = &channel.home_chat
                    {
                        let mut home = home.splitn(2, ':');
                        chat = home.next().map(str::to_owned);
                        thread = home.next().map(str::to_owned);
                    }
                    Destination::chat(platform, channel.id, chat.unwrap_or_default(), thread)
                }
            };
            if !chats.iter().any(|d| d.same_chat(&dest)) {
                chats.push(dest);
            }
        }
        let mut chats = chats.into_iter().map(|d| d.labelled(label));
        let Some(mut first) = chats.next() else { return Ok(None) };
        first.also = chats.collect();
        Ok(Some(first))
    }
}

/// The home chat (`/sethome`) of each of `agent`'s active bots: what `all` delivers to.
fn home_chats(channels: &[crate::Channel], agent: AgentId) -> Vec<Destination> {
    channels
        .iter()
        .filter(|c| c.agent_id == agent && c.status == hermes_core::ChannelStatus::Active)
        .filter_map(|c| {
            let mut home = c.home_chat.as_deref()?.splitn(2, ':');
            let chat = home.next()?.to_owned();
            Some(Destination::chat(c.platform, c.id, chat, home.next().map(str::to_owned)))
        })
        .collect()
}
