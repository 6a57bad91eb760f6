// An agent's secret bindings, on its page: which of the team's keys its sandboxes may use under
// which variable name. The sandbox holds a placeholder; the egress proxy adds the key on
// requests to the key's hosts. Never a value here: keys are added on the provider keys page.

import { h, field } from '../dom.js';
import { t } from '../i18n.js';
import { api, headings, actionButton, submitThenReload } from '../app.js';

export async function secretsSection(section, ctx, agent, edit) {
  const base = `/admin/v1/tenants/${ctx.id}/agents/${agent.id}/secrets`;
  const bindings = await api('GET', base);
  const status = h('div', { 'aria-live': 'polite' });
  const rows = bindings.data.map((b) => h('tr', {},
    h('td', {}, h('code', {}, b.name)), h('td', {}, b.credential),
    h('td', {}, b.has_key ? b.hosts.join(', ') : t('secretNoKey')),
    h('td', {}, edit
      ? actionButton(t('remove'), () => api('DELETE', `${base}/${encodeURIComponent(b.name)}`), status,
        { danger: true, label: b.name, confirmText: t('confirmDelete') })
      : null)));
  const table = bindings.data.length === 0 ? h('p', {}, t('none')) : h('table', { 'aria-label': t('secrets') },
    headings(['secretName', 'credential', 'secretHosts'], true), h('tbody', {}, rows));
  const card = h('section', { class: 'card', 'data-testid': 'secrets' }, h('h2', {}, t('secrets')),
    h('p', { class: 'hint' }, t('secretsHint')), table, status);
  if (edit) {
    const name = h('input', { type: 'text', required: true, maxlength: '128', placeholder: 'GITHUB_TOKEN' });
    const pools = await api('GET', `/admin/v1/tenants/${ctx.id}/credentials`);
    const credential = h('select', { required: true }, pools.data.map((p) => h('option', { value: p.provider }, p.provider)));
    const query = h('input', { type: 'checkbox', id: 'secret-query' });
    const bodyField = h('input', { type: 'text', maxlength: '200' });
    const required = h('input', { type: 'text', maxlength: '100', placeholder: 'authorization' });
    const added = h('div', { 'aria-live': 'polite' });
    card.append(h('form', {
      on: submitThenReload(async () => {
        const placement = { query: query.checked };
        if (bodyField.value.trim()) placement.body_field = bodyField.value.trim();
        if (required.value.trim()) placement.required_header = required.value.trim();
        await api('PUT', `${base}/${encodeURIComponent(name.value.trim())}`, { credential: credential.value, placement });
      }, added),
    }, h('h3', {}, t('secretBind')), field(t('secretName'), name), field(t('credential'), credential),
    h('div', { class: 'field inline' }, query, h('label', { for: 'secret-query' }, t('secretInQuery'))),
    field(t('secretBodyField'), bodyField), field(t('secretRequiredHeader'), required, t('secretRequiredHint')),
    h('button', { type: 'submit' }, t('secretBind')), added));
  }
  section.append(card);
}
