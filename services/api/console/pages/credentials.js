// API keys (for the OpenAI-compatible API) and admin tokens (for this API): listed without
// secrets; a new one's secret is shown once.

import { h, field, when } from '../dom.js';
import { t, roleName } from '../i18n.js';
import { api, tenantGets, headings, actionButton, submitting } from '../app.js';
import { toolsetChoices, limitPicker } from '../toolsets.js';

function secretBox(secret) {
  return h('div', { class: 'card secret-box', role: 'status' },
    h('p', {}, t('shownOnce')), h('code', { class: 'secret', 'data-testid': 'secret' }, secret));
}

// The keys or tokens at `path` (a tenant's keys or tokens), one row each: `cells` gives a row's
// first cells, then its status and, for a caller who may manage them, a revoke button.
function listTable(caption, columns, items, cells, path, manage) {
  const status = h('div', { 'aria-live': 'polite' });
  const revoke = (it) => actionButton(t('revoke'), () => api('DELETE', `${path}/${it.id}`), status, { danger: true, label: it.name });
  return [h('table', {},
    h('caption', {}, t(caption)),
    headings([...columns, 'status'], true),
    h('tbody', {}, items.map((it) => h('tr', {},
      cells(it), h('td', {}, it.revoked_at ? t('revoked') : ''),
      h('td', {}, manage && !it.revoked_at ? revoke(it) : null))))), status];
}

// The form that makes a key or token at `path` from `body()` and shows its secret once.
function newSecretForm(heading, path, body, ...fields) {
  const status = h('div', { 'aria-live': 'polite' });
  return h('form', {
    class: 'card',
    on: submitting(async () => {
      const made = await api('POST', path, body());
      status.replaceChildren(secretBox(made.secret));
    }, status),
  }, h('h2', {}, t(heading)), fields, h('button', { type: 'submit' }, t('create')), status);
}

export async function keysPage(section, ctx) {
  const [keys, agents] = await tenantGets(ctx, 'keys', 'agents');
  const agentName = (id) => agents.data.find((a) => a.id === id)?.name || id;
  const manage = ctx.may('keys.manage');
  section.append(...listTable('keys', ['name', 'prefix', 'agent', 'toolsets', 'created', 'expires'], keys.data, (k) => [
    h('td', {}, k.name), h('td', {}, h('code', {}, k.prefix)), h('td', {}, k.agent_id ? agentName(k.agent_id) : t('anyAgent')),
    h('td', {}, k.toolsets ? k.toolsets.join(', ') : t('allOfAgents')),
    h('td', {}, when(k.created_at)), h('td', {}, when(k.expires_at))], `/admin/v1/tenants/${ctx.id}/keys`, manage));
  if (!manage) return;
  const name = h('input', { type: 'text', required: true, maxlength: '100' });
  const agent = h('select', {}, h('option', { value: '' }, t('anyAgent')), agents.data.map((a) => h('option', { value: a.id }, a.name)));
  // A key's calls may be kept to some toolsets of their agent's (never more).
  const toolsets = limitPicker(await toolsetChoices(ctx), null, false, 'key-toolsets', t('keyToolsets'));
  section.append(newSecretForm('newKey', `/admin/v1/tenants/${ctx.id}/keys`, () => {
    const body = { name: name.value };
    if (agent.value) body.agent = agent.value;
    if (toolsets.value() !== null) body.toolsets = toolsets.value();
    return body;
  }, field(t('name'), name), field(t('agent'), agent), toolsets.element));
}

export async function tokensPage(section, ctx) {
  const tokens = await api('GET', `/admin/v1/tenants/${ctx.id}/tokens`);
  const manage = ctx.may('tokens.manage');
  section.append(...listTable('tokens', ['name', 'prefix', 'role', 'expires', 'lastUsed'], tokens.data, (tk) => [
    h('td', {}, tk.name, tk.person_id ? '' : ` · ${t('service')}`), h('td', {}, h('code', {}, tk.prefix)),
    h('td', {}, roleName(tk.role)), h('td', {}, when(tk.expires_at)), h('td', {}, when(tk.last_used_at))],
  `/admin/v1/tenants/${ctx.id}/tokens`, manage));
  if (!manage) return;
  const name = h('input', { type: 'text', required: true, maxlength: '100' });
  const roles = ['member', 'admin', 'owner'].filter((r) => ctx.view.standing === 'operator' || ctx.view.standing === 'owner' || r !== 'owner');
  const role = h('select', {}, roles.map((r) => h('option', { value: r }, roleName(r))));
  const days = h('input', { type: 'number', value: '90', min: '1', max: '366' });
  const service = h('input', { type: 'checkbox', id: 'service-token' });
  section.append(newSecretForm('newToken', `/admin/v1/tenants/${ctx.id}/tokens`, () => ({
    name: name.value, role: role.value, expires_in_days: Number(days.value), service: service.checked,
  }), field(t('name'), name), field(t('role'), role), field(t('days'), days),
  h('div', { class: 'field inline' }, service, h('label', { for: 'service-token' }, t('service')))));
}
