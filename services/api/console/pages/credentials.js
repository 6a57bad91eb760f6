// API keys (for the OpenAI-compatible API) and admin tokens (for this API): listed without
// secrets; a new one's secret is shown once.

import { h, field, when } from '../dom.js';
import { t, roleName } from '../i18n.js';
import { api, headings, actionButton, submitting } from '../app.js';

function secretBox(secret) {
  return h('div', { class: 'card secret-box', role: 'status' },
    h('p', {}, t('shownOnce')), h('code', { class: 'secret', 'data-testid': 'secret' }, secret));
}

function revokeButton(label, path, status) {
  return actionButton(t('revoke'), () => api('DELETE', path), status, { danger: true, label });
}

export async function keysPage(section, ctx) {
  const [keys, agents] = await Promise.all([
    api('GET', `/admin/v1/tenants/${ctx.id}/keys`),
    api('GET', `/admin/v1/tenants/${ctx.id}/agents`),
  ]);
  const agentName = (id) => agents.data.find((a) => a.id === id)?.name || id;
  const manage = ctx.may('keys.manage');
  const listStatus = h('div', { 'aria-live': 'polite' });
  section.append(h('table', {},
    h('caption', {}, t('keys')),
    headings(['name', 'prefix', 'agent', 'created', 'expires', 'status'], true),
    h('tbody', {}, keys.data.map((k) => h('tr', {},
      h('td', {}, k.name), h('td', {}, h('code', {}, k.prefix)), h('td', {}, k.agent_id ? agentName(k.agent_id) : t('anyAgent')),
      h('td', {}, when(k.created_at)), h('td', {}, when(k.expires_at)), h('td', {}, k.revoked_at ? t('revoked') : ''),
      h('td', {}, manage && !k.revoked_at ? revokeButton(k.name, `/admin/v1/tenants/${ctx.id}/keys/${k.id}`, listStatus) : null))))), listStatus);
  if (!manage) return;
  const name = h('input', { type: 'text', required: true, maxlength: '100' });
  const agent = h('select', {}, h('option', { value: '' }, t('anyAgent')), agents.data.map((a) => h('option', { value: a.id }, a.name)));
  const status = h('div', { 'aria-live': 'polite' });
  section.append(h('form', {
    class: 'card',
    on: submitting(async () => {
      const body = { name: name.value };
      if (agent.value) body.agent = agent.value;
      const made = await api('POST', `/admin/v1/tenants/${ctx.id}/keys`, body);
      status.replaceChildren(secretBox(made.secret));
    }, status),
  }, h('h2', {}, t('newKey')), field(t('name'), name), field(t('agent'), agent), h('button', { type: 'submit' }, t('create')), status));
}

export async function tokensPage(section, ctx) {
  const tokens = await api('GET', `/admin/v1/tenants/${ctx.id}/tokens`);
  const manage = ctx.may('tokens.manage');
  const listStatus = h('div', { 'aria-live': 'polite' });
  section.append(h('table', {},
    h('caption', {}, t('tokens')),
    headings(['name', 'prefix', 'role', 'expires', 'lastUsed', 'status'], true),
    h('tbody', {}, tokens.data.map((tk) => h('tr', {},
      h('td', {}, tk.name, tk.person_id ? '' : ` · ${t('service')}`), h('td', {}, h('code', {}, tk.prefix)),
      h('td', {}, roleName(tk.role)), h('td', {}, when(tk.expires_at)), h('td', {}, when(tk.last_used_at)),
      h('td', {}, tk.revoked_at ? t('revoked') : ''),
      h('td', {}, manage && !tk.revoked_at ? revokeButton(tk.name, `/admin/v1/tenants/${ctx.id}/tokens/${tk.id}`, listStatus) : null))))), listStatus);
  if (!manage) return;
  const name = h('input', { type: 'text', required: true, maxlength: '100' });
  const roles = ['member', 'admin', 'owner'].filter((r) => ctx.view.standing === 'operator' || ctx.view.standing === 'owner' || r !== 'owner');
  const role = h('select', {}, roles.map((r) => h('option', { value: r }, roleName(r))));
  const days = h('input', { type: 'number', value: '90', min: '1', max: '366' });
  const service = h('input', { type: 'checkbox', id: 'service-token' });
  const status = h('div', { 'aria-live': 'polite' });
  section.append(h('form', {
    class: 'card',
    on: submitting(async () => {
      const made = await api('POST', `/admin/v1/tenants/${ctx.id}/tokens`, {
        name: name.value, role: role.value, expires_in_days: Number(days.value), service: service.checked,
      });
      status.replaceChildren(secretBox(made.secret));
    }, status),
  }, h('h2', {}, t('newToken')), field(t('name'), name), field(t('role'), role), field(t('days'), days),
  h('div', { class: 'field inline' }, service, h('label', { for: 'service-token' }, t('service'))),
  h('button', { type: 'submit' }, t('create')), status));
}
