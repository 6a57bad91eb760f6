// Chat bots: the bound ones (with the people waiting to be let in, and which of the agent's
// toolsets each kind of chat may use), and binding a new one step by step: pick the platform,
// paste what the platform gave you, and the answer says what is left to do there (a webhook
// URL to paste, a socket to enable).

import { h, field, when } from '../dom.js';
import { t } from '../i18n.js';
import { api, tenantGets, headings, notice, actionButton, submitting } from '../app.js';
import { toolsetChoices, limitPicker } from '../toolsets.js';

// What each platform asks for, by mode; each field is [name, input type, label key, hint key].
const PLATFORMS = {
  telegram: {
    modes: ['poll', 'webhook'],
    fields: {
      poll: [['token', 'password', 'botToken', 'hintTelegramToken']],
      webhook: [['token', 'password', 'botToken', 'hintTelegramToken'], ['public_url', 'url', 'publicUrl', 'hintPublicUrl']],
    },
  },
  slack: {
    modes: ['socket', 'webhook'],
    fields: {
      socket: [['token', 'password', 'botToken', 'hintSlackToken'], ['app_token', 'password', 'appToken', 'hintSlackAppToken']],
      webhook: [['token', 'password', 'botToken', 'hintSlackToken'], ['signing_secret', 'password', 'signingSecret', null],
        ['public_url', 'url', 'publicUrl', 'hintPublicUrl']],
    },
  },
  wecom: {
    modes: ['websocket', 'webhook'],
    fields: {
      websocket: [['bot_id', 'text', 'botId', null], ['secret', 'password', 'secret', null]],
      webhook: [['corp_id', 'text', 'corpId', null], ['wecom_agent_id', 'number', 'wecomAgentId', null],
        ['secret', 'password', 'secret', null], ['token', 'password', 'callbackToken', null],
        ['aes_key', 'password', 'aesKey', null], ['public_url', 'url', 'publicUrl', 'hintPublicUrl']],
    },
  },
};

export async function channelsPage(section, ctx) {
  const [[channels, agents], choices] = await Promise.all([tenantGets(ctx, 'channels', 'agents'), toolsetChoices(ctx)]);
  if (channels.data.length === 0) section.append(h('p', {}, t('noChannels')));
  for (const c of channels.data) {
    const agent = agents.data.find((a) => a.id === c.agent_id) || { name: c.agent_id, toolsets: [] };
    section.append(await channelCard(ctx, c, agent.name, choices.filter((x) => agent.toolsets.includes(x.name))));
  }
  if (ctx.may('channels.manage')) section.append(bindForm(ctx, agents.data));
}

async function channelCard(ctx, c, agent, choices) {
  const waiting = await api('GET', `/admin/v1/tenants/${ctx.id}/channels/${c.id}/pairings`);
  const status = h('div', { 'aria-live': 'polite' });
  const rows = waiting.data.map((p) => h('tr', {},
    h('td', {}, p.user_name || p.user_id), h('td', {}, h('code', {}, p.code)), h('td', {}, when(p.expires_at)),
    h('td', {}, ctx.may('channels.manage') ? h('button', {
      type: 'button', 'aria-label': `${t('approve')}: ${p.user_name || p.user_id}`,
      on: {
        click: async (e) => {
          e.target.disabled = true;
          try {
            await api('POST', `/admin/v1/tenants/${ctx.id}/channels/${c.id}/pairings/approve`, { code: p.code });
            status.replaceChildren(notice('ok', t('approved')));
            e.target.closest('tr').remove();
          } catch (err) { status.replaceChildren(notice('error', err.message)); e.target.disabled = false; }
        },
      },
    }, t('approve')) : null)));
  return h('article', { class: 'card', 'data-testid': 'channel' },
    h('h3', {}, `${c.platform} · ${c.bot_username ? `@${c.bot_username}` : c.id}`),
    h('dl', { class: 'facts' },
      h('dt', {}, t('agent')), h('dd', {}, agent), h('dt', {}, t('mode')), h('dd', {}, c.mode),
      h('dt', {}, t('dmPolicy')), h('dd', {}, c.dm_policy), h('dt', {}, t('created')), h('dd', {}, when(c.created_at))),
    h('h4', {}, t('waitingPairings')),
    waiting.data.length === 0 ? h('p', { class: 'hint' }, t('noPairings')) : h('table', {},
      headings(['who', 'code', 'expires'], true),
      h('tbody', {}, rows)),
    status,
    toolsHere(ctx, c, choices),
    ctx.may('channels.manage')
      ? actionButton(t('unbind'), () => api('DELETE', `/admin/v1/tenants/${ctx.id}/channels/${c.id}`), status,
        { danger: true, confirmText: t('confirmUnbind') })
      : null);
}

// "C0TEAM: terminal, web" lines to and from a bot's rules for single chats.
const rulesText = (chats) => Object.entries(chats || {}).map(([id, list]) => `${id}: ${list.join(', ')}`).join('\n');
function parseRules(text) {
  const chats = {};
  for (const line of text.split('\n').map((l) => l.trim()).filter(Boolean)) {
    const at = line.lastIndexOf(':');
    if (at <= 0) throw new Error(`${t('chatRules')}: ${line}`);
    chats[line.slice(0, at).trim()] = line.slice(at + 1).split(',').map((n) => n.trim()).filter(Boolean);
  }
  return chats;
}

// Which of the agent's toolsets direct messages, groups and single chats may use: shown to
// everyone, changed by those who may manage bots (the next message sees the change).
function toolsHere(ctx, c, choices) {
  const edit = ctx.may('channels.manage');
  const rules = c.toolsets || {};
  const direct = limitPicker(choices, rules.direct ?? null, !edit, `tools-${c.id}-direct`, t('directChats'));
  const groups = limitPicker(choices, rules.groups ?? null, !edit, `tools-${c.id}-groups`, t('groupChats'));
  const chats = h('textarea', { rows: '2', placeholder: 'C0TEAM: terminal, web', disabled: !edit });
  chats.value = rulesText(rules.chats);
  const status = h('div', { 'aria-live': 'polite' });
  return h('form', {
    class: 'tools-here', 'data-testid': 'tools-here',
    on: submitting(async () => {
      const toolsets = { chats: parseRules(chats.value) };
      if (direct.value() !== null) toolsets.direct = direct.value();
      if (groups.value() !== null) toolsets.groups = groups.value();
      await api('PATCH', `/admin/v1/tenants/${ctx.id}/channels/${c.id}`, { toolsets });
      status.replaceChildren(notice('ok', t('saved')));
    }, status),
  }, h('h4', {}, t('toolsHere')), h('p', { class: 'hint' }, t('toolsHereHint')),
  direct.element, groups.element, field(t('chatRules'), chats, t('chatRulesHint')),
  edit ? h('button', { type: 'submit' }, t('save')) : null, status);
}

function bindForm(ctx, agents) {
  const platform = h('select', { name: 'platform' }, Object.keys(PLATFORMS).map((p) => h('option', { value: p }, t(`platform_${p}`))));
  const mode = h('select', { name: 'mode' });
  const agent = h('select', { name: 'agent' }, agents.map((a) => h('option', { value: a.id }, a.name)));
  const dm = h('select', { name: 'dm_policy' }, ['pairing', 'open', 'allowlist', 'closed'].map((p) => h('option', { value: p }, t(`dm_${p}`))));
  const fields = h('div', {});
  const inputs = new Map();
  const status = h('div', { 'aria-live': 'polite' });
  const drawFields = () => {
    const spec = PLATFORMS[platform.value];
    inputs.clear();
    fields.replaceChildren(...spec.fields[mode.value].map(([name, type, label, hint]) => {
      const input = h('input', { type, name, required: name !== 'public_url' || mode.value === 'webhook', autocomplete: 'off' });
      inputs.set(name, input);
      return field(t(label), input, hint ? t(hint) : null);
    }));
  };
  const drawModes = () => {
    mode.replaceChildren(...PLATFORMS[platform.value].modes.map((m) => h('option', { value: m }, t(`mode_${m}`))));
    drawFields();
  };
  platform.addEventListener('change', drawModes);
  mode.addEventListener('change', drawFields);
  drawModes();
  return h('form', {
    class: 'card',
    on: {
      submit: async (e) => {
        e.preventDefault();
        const body = { agent: agent.value, platform: platform.value, mode: mode.value, dm_policy: dm.value };
        for (const [name, input] of inputs) {
          if (input.value) body[name] = name === 'wecom_agent_id' ? Number(input.value) : input.value;
        }
        status.replaceChildren(notice('info', t('checkingBot')));
        try {
          const bound = await api('POST', `/admin/v1/tenants/${ctx.id}/channels`, body);
          status.replaceChildren(notice('ok', `${t('bound')} ${bound.bot_username ? `@${bound.bot_username}` : ''}`),
            bound.setup ? h('p', { 'data-testid': 'setup' }, bound.setup) : null,
            h('a', { href: `${ctx.base}/channels` }, t('refresh')));
        } catch (err) { status.replaceChildren(notice('error', err.message)); }
      },
    },
  }, h('h2', {}, t('bindBot')),
  h('ol', { class: 'steps' },
    h('li', {}, field(t('platform'), platform)),
    h('li', {}, field(t('mode'), mode), fields),
    h('li', {}, field(t('agent'), agent), field(t('dmPolicy'), dm, t('hintPairing')))),
  h('button', { type: 'submit' }, t('bind')), status);
}
