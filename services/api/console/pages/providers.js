// Provider keys, pooled per provider: each key's health (ready, cooling down after a rate
// limit, dead), the pool's strategy, and adding a key (write-only) or removing one.

import { h, field, when } from '../dom.js';
import { t } from '../i18n.js';
import { api, headings, notice, actionButton, submitThenReload } from '../app.js';

const KNOWN_HOSTS = { openai: 'api.openai.com', openrouter: 'openrouter.ai', anthropic: 'api.anthropic.com' };
const STRATEGIES = ['fill_first', 'round_robin', 'random', 'least_used'];

export async function providersPage(section, ctx) {
  const pools = await api('GET', `/admin/v1/tenants/${ctx.id}/credentials`);
  const manage = ctx.may('credentials.manage');
  const status = h('div', { 'aria-live': 'polite' });
  if (pools.data.length === 0) section.append(h('p', {}, t('noProviderKeys')));
  for (const pool of pools.data) {
    const strategy = manage ? h('select', {
      'aria-label': `${t('strategy')}: ${pool.provider}`,
      on: {
        change: async (e) => {
          try {
            await api('PUT', `/admin/v1/tenants/${ctx.id}/credentials/pools/${encodeURIComponent(pool.provider)}`, { strategy: e.target.value });
            status.replaceChildren(notice('ok', t('saved')));
          } catch (err) { status.replaceChildren(notice('error', err.message)); }
        },
      },
    }, STRATEGIES.map((s) => h('option', { value: s, selected: s === pool.strategy }, s))) : pool.strategy;
    section.append(h('article', { class: 'card' },
      h('h3', {}, pool.provider), h('p', {}, `${t('strategy')}: `, strategy),
      h('table', {},
        headings(['name', 'health', 'uses', 'hosts', 'created'], true),
        h('tbody', {}, pool.keys.map((k) => h('tr', { 'data-testid': 'provider-key' },
          h('td', {}, k.label), h('td', {}, k.health ? t(`health_${k.health.state}`) : '?'),
          h('td', {}, k.health ? String(k.health.uses) : ''),
          h('td', {}, k.allowed_hosts.join(', ')),
          h('td', {}, when(k.created_at)),
          h('td', {}, manage
            ? actionButton(t('remove'), () => api('DELETE', `/admin/v1/tenants/${ctx.id}/credentials/${k.id}`), status, { danger: true, label: k.label })
            : null)))))));
  }
  section.append(status);
  if (!manage) return;
  const provider = h('input', { type: 'text', required: true, placeholder: 'openai', list: 'providers' });
  const label = h('input', { type: 'text', required: true });
  const secret = h('input', { type: 'password', required: true, autocomplete: 'off' });
  const hosts = h('input', { type: 'text', required: true, placeholder: 'api.openai.com' });
  provider.addEventListener('change', () => { if (!hosts.value && KNOWN_HOSTS[provider.value]) hosts.value = KNOWN_HOSTS[provider.value]; });
  const addStatus = h('div', { 'aria-live': 'polite' });
  section.append(h('form', {
    class: 'card',
    on: submitThenReload(() => api('POST', `/admin/v1/tenants/${ctx.id}/credentials`, {
      provider: provider.value, label: label.value, secret: secret.value,
      allowed_hosts: hosts.value.split(',').map((x) => x.trim()).filter(Boolean),
    }), addStatus),
  }, h('h2', {}, t('addProviderKey')), field(t('provider'), provider), field(t('name'), label),
  field(t('providerKey'), secret, t('writeOnly')), field(t('hosts'), hosts, t('hostsHint')),
  h('button', { type: 'submit' }, t('create')), addStatus));
}
