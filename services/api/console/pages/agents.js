// Agents: the list, a form to create one (its provider key write-only; its toolsets checked as
// the installation's defaults), and each agent's curated memory, which people may correct: the
// next turn sees the change.

import { h, field, when } from '../dom.js';
import { t } from '../i18n.js';
import { api, headings, notice, submitting, submitThenReload } from '../app.js';
import { mcpSection } from './mcp.js';
import { secretsSection } from './secrets.js';
import { toolsetChoices, toolsetPicker } from '../toolsets.js';

export async function agentsPage(section, ctx) {
  const agents = await api('GET', `/admin/v1/tenants/${ctx.id}/agents`);
  if (agents.data.length === 0) section.append(h('p', {}, t('none')));
  else {
    section.append(h('table', {},
      h('caption', {}, t('agents')),
      headings(['name', 'model', 'provider', 'toolsets', 'egress', 'created'], true),
      h('tbody', {}, agents.data.map((a) => h('tr', {},
        h('td', {}, h('a', { href: `${ctx.base}/agent/${a.id}` }, a.name)), h('td', {}, h('code', {}, a.model)), h('td', {}, a.provider_base_url),
        h('td', {}, a.toolsets.join(', ')), h('td', {}, a.egress ? t('yes') : t('no')), h('td', {}, when(a.created_at)),
        h('td', {}, h('a', { href: `${ctx.base}/memory/${a.id}` }, t('memory')), ' · ', h('a', { href: `${ctx.base}/skills/${a.id}` }, t('skills'))))))));
  }
  if (ctx.may('agents.edit')) section.append(createForm(ctx, await toolsetChoices(ctx)));
}

function createForm(ctx, choices) {
  const name = h('input', { type: 'text', required: true, maxlength: '64' });
  const model = h('input', { type: 'text', required: true });
  const url = h('input', { type: 'url', required: true, placeholder: 'https://api.openai.com/v1' });
  const key = h('input', { type: 'password', autocomplete: 'off' });
  const soul = h('textarea', { rows: '4' });
  const toolsets = toolsetPicker(choices, choices.filter((c) => c.default).map((c) => c.name), false);
  const status = h('div', { 'aria-live': 'polite' });
  return h('form', {
    class: 'card',
    on: submitThenReload(async () => {
      const body = { name: name.value, model: model.value, provider_base_url: url.value, toolsets: toolsets.value() };
      if (key.value) body.provider_key = key.value;
      if (soul.value.trim()) body.soul = soul.value;
      await api('POST', `/admin/v1/tenants/${ctx.id}/agents`, body);
    }, status),
  }, h('h2', {}, t('newAgent')), field(t('name'), name), field(t('model'), model), field(t('providerUrl'), url),
  field(t('providerKey'), key, t('writeOnly')), field(t('soul'), soul), toolsets.element,
  h('p', { class: 'hint' }, t('toolsetsDefaultHint')),
  h('button', { type: 'submit' }, t('create')), status);
}

const SEPARATOR = '§';

function toEntries(text) {
  return text.split(new RegExp(`^\\s*${SEPARATOR}\\s*$`, 'm')).map((e) => e.trim()).filter(Boolean);
}

export async function memoryPage(section, ctx, agentId) {
  const user = new URLSearchParams(location.search).get('user') || '';
  const found = await api('GET', `/admin/v1/tenants/${ctx.id}/agents/${agentId}/memory?user=${encodeURIComponent(user)}`);
  section.append(h('p', {}, h('a', { href: `${ctx.base}/agents` }, `← ${t('back')}`)), h('h2', {}, t('memory')),
    h('p', { class: 'hint' }, t('memoryHint')),
    found.enabled ? null : h('p', { class: 'notice info', role: 'note' }, t('memoryOff')));
  const editor = (target, entries, limit) => {
    const area = h('textarea', { rows: '10', 'aria-label': t(target === 'memory' ? 'memoryDoc' : 'userDoc'), 'data-testid': `memory-${target}` });
    area.value = entries.join(`\n${SEPARATOR}\n`);
    if (!ctx.may('memory.edit')) area.setAttribute('readonly', '');
    const status = h('div', { 'aria-live': 'polite' });
    const save = ctx.may('memory.edit') ? h('button', {
      type: 'button',
      on: {
        click: async () => {
          try {
            const done = await api('PUT', `/admin/v1/tenants/${ctx.id}/agents/${agentId}/memory`, { target, user, entries: toEntries(area.value) });
            status.replaceChildren(notice('ok', `${t('saved')} (${done.entries.length})`));
          } catch (err) { status.replaceChildren(notice('error', err.message)); }
        },
      },
    }, t('save')) : null;
    return h('div', { class: 'card' }, h('h3', {}, t(target === 'memory' ? 'memoryDoc' : 'userDoc'), ` (≤ ${limit})`), area, save, status);
  };
  section.append(editor('memory', found.memory, found.memory_char_limit));
  const who = h('input', { type: 'text', value: user, placeholder: 'telegram:12345' });
  section.append(h('form', { class: 'filters', on: { submit: (e) => { e.preventDefault(); location.assign(`${ctx.base}/memory/${agentId}?user=${encodeURIComponent(who.value)}`); } } },
    field(t('userKey'), who), h('button', { type: 'submit' }, t('open'))));
  if (user) section.append(editor('user', found.user_profile, found.user_char_limit));
}

// One agent's settings: model, SOUL, toolsets, internet access, approvals, how it sees images;
// and its MCP servers.
// New sessions use them.
export async function agentPage(section, ctx, agentId) {
  const [agents, choices] = await Promise.all([api('GET', `/admin/v1/tenants/${ctx.id}/agents`), toolsetChoices(ctx)]);
  const a = agents.data.find((x) => x.id === agentId);
  section.append(h('p', {}, h('a', { href: `${ctx.base}/agents` }, `← ${t('back')}`)));
  if (!a) { section.append(h('p', { role: 'alert', class: 'notice error' }, t('none'))); return; }
  const edit = ctx.may('agents.edit');
  const model = h('input', { type: 'text', value: a.model, required: true });
  const soul = h('textarea', { rows: '5' });
  soul.value = a.soul || '';
  const toolsets = toolsetPicker(choices, a.toolsets, !edit);
  const egress = h('input', { type: 'checkbox', id: 'agent-egress', checked: a.egress });
  const mode = h('select', {}, ['manual', 'smart', 'off'].map((m) => h('option', { value: m, selected: m === a.approval_mode }, t(`approval_${m}`))));
  const images = h('select', {}, ['auto', 'native', 'text'].map((m) => h('option', { value: m, selected: m === a.image_input_mode }, t(`image_${m}`))));
  const workspace = h('select', {}, ['person', 'agent', 'session'].map((m) => h('option', { value: m, selected: m === a.workspace }, t(`workspace_${m}`))));
  const offer = await api('GET', `/admin/v1/tenants/${ctx.id}/sandbox-images`);
  const chosen = a.sandbox?.image || 'default';
  const image = h('select', {}, offer.images.map((i) => h('option', { value: i.name, selected: i.name === chosen }, i.carries ? `${i.name}: ${i.carries}` : i.name)));
  const cpus = h('input', { type: 'number', min: '0.1', step: '0.1', max: String(offer.max_cpus), value: a.sandbox?.cpus ?? '', placeholder: t('default') });
  const memory = h('input', { type: 'number', min: '64', step: '64', max: String(offer.max_memory_mb), value: a.sandbox?.memory_mb ?? '', placeholder: t('default') });
  const efforts = ['', 'none', 'minimal', 'low', 'medium', 'high', 'xhigh'];
  const effort = h('select', {}, efforts.map((e) => h('option', { value: e, selected: e === (a.model_settings?.reasoning_effort || '') }, e || t('default'))));
  const temperature = h('input', { type: 'number', min: '0', max: '2', step: '0.1', value: a.model_settings?.temperature ?? '', placeholder: t('default') });
  const routing = a.provider_routing || {};
  const order = h('input', { type: 'text', value: (routing.order || []).join(', '), placeholder: 'anthropic, google-vertex' });
  const sort = h('select', {}, ['', 'price', 'throughput', 'latency'].map((m) => h('option', { value: m, selected: m === (routing.sort || '') }, m ? t(`sort_${m}`) : t('default'))));
  const keeping = h('select', {}, ['', 'allow', 'deny'].map((m) => h('option', { value: m, selected: m === (routing.data_collection || '') }, m ? t(`collection_${m}`) : t('default'))));
  const eye = h('input', { type: 'text', value: a.vision_model?.model || '', placeholder: 'gpt-4o-mini' });
  const eyeUrl = h('input', { type: 'url', value: a.vision_model?.base_url || '', placeholder: 'https://api.openai.com/v1' });
  const status = h('div', { 'aria-live': 'polite' });
  for (const control of [model, soul, egress, mode, images, workspace, image, cpus, memory, effort, temperature, order, sort, keeping, eye, eyeUrl]) if (!edit) control.setAttribute('disabled', '');
  // Both fields set a vision model; both emptied take it away; otherwise it stays as it is.
  const visionModel = () => {
    if (eye.value.trim() && eyeUrl.value.trim()) return { model: eye.value.trim(), base_url: eyeUrl.value.trim() };
    if (!eye.value.trim() && !eyeUrl.value.trim() && a.vision_model) return null;
    return undefined;
  };
  section.append(h('form', {
    class: 'card',
    on: submitting(async () => {
      await api('PATCH', `/admin/v1/tenants/${ctx.id}/agents/${a.id}`, {
        model: model.value, soul: soul.value, toolsets: toolsets.value(),
        egress: egress.checked, approval_mode: mode.value, image_input_mode: images.value, vision_model: visionModel(),
        workspace: workspace.value,
        sandbox: {
          ...(a.sandbox || {}),
          image: image.value === 'default' ? undefined : image.value,
          cpus: cpus.value ? Number(cpus.value) : undefined,
          memory_mb: memory.value ? Number(memory.value) : undefined,
        },
        model_settings: {
          ...(a.model_settings || {}),
          reasoning_effort: effort.value || undefined,
          temperature: temperature.value ? Number(temperature.value) : undefined,
        },
        provider_routing: {
          ...routing,
          order: order.value.split(',').map((p) => p.trim()).filter(Boolean),
          sort: sort.value || undefined,
          data_collection: keeping.value || undefined,
        },
      });
      status.replaceChildren(notice('ok', t('saved')));
    }, status),
  }, h('h2', {}, a.name), h('p', { class: 'hint' }, a.provider_base_url),
  field(t('model'), model), field(t('soul'), soul), toolsets.element,
  h('div', { class: 'field inline' }, egress, h('label', { for: 'agent-egress' }, t('egress'))),
  field(t('approvalMode'), mode), field(t('imageMode'), images), field(t('workspace'), workspace),
  field(t('sandboxImage'), image), field(t('sandboxCpus'), cpus), field(t('sandboxMemory'), memory),
  field(t('reasoningEffort'), effort), field(t('temperature'), temperature),
  field(t('providerOrder'), order), field(t('providerSort'), sort), field(t('dataCollection'), keeping), field(t('visionModel'), eye), field(t('visionBaseUrl'), eyeUrl),
  edit ? h('button', { type: 'submit' }, t('save')) : null, status));
  await mcpSection(section, ctx, a, edit);
  await secretsSection(section, ctx, a, edit);
}
