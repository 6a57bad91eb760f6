// An agent's MCP servers, on its page: listed (secret values are never sent here), added or
// replaced whole as upstream's configuration in JSON (`${NAME}` naming one of the team's
// keys), removed. The agent's next turn has their tools.

import { h, field } from '../dom.js';
import { t } from '../i18n.js';
import { api, headings, notice, actionButton, submitThenReload } from '../app.js';

const EXAMPLE = '{"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}';

export async function mcpSection(section, ctx, agent, edit) {
  const base = `/admin/v1/tenants/${ctx.id}/agents/${agent.id}/mcp-servers`;
  const servers = await api('GET', base);
  const status = h('div', { 'aria-live': 'polite' });
  const rows = servers.data.map((s) => h('tr', {},
    h('td', {}, s.name),
    h('td', {}, h('code', {}, s.config.url || [s.config.command, ...(s.config.args || [])].join(' '))),
    h('td', {}, s.enabled ? t('yes') : t('no')),
    h('td', {}, s.config.sampling?.enabled ? t('yes') : t('no')),
    h('td', {}, edit
      ? actionButton(t('remove'), () => api('DELETE', `${base}/${encodeURIComponent(s.name)}`), status,
        { danger: true, label: s.name, confirmText: t('confirmDelete') })
      : null)));
  const table = servers.data.length === 0 ? h('p', {}, t('none')) : h('table', { 'aria-label': t('mcpServers') },
    headings(['name', 'mcpTarget', 'enabled', 'mcpSampling'], true),
    h('tbody', {}, rows));
  const card = h('section', { class: 'card' }, h('h2', {}, t('mcpServers')), table, status);
  if (edit) {
    const name = h('input', { type: 'text', required: true, maxlength: '40', placeholder: 'github' });
    const config = h('textarea', { rows: '4', required: true, placeholder: EXAMPLE });
    const added = h('div', { 'aria-live': 'polite' });
    card.append(h('form', {
      on: submitThenReload(async () => {
        let body;
        try { body = JSON.parse(config.value); } catch { throw new Error(t('mcpNotJson')); }
        await api('PUT', `${base}/${encodeURIComponent(name.value.trim())}`, body);
      }, added),
    }, h('h3', {}, t('mcpAdd')), field(t('name'), name), field(t('mcpConfig'), config, t('mcpConfigHint')),
    h('button', { type: 'submit' }, t('mcpAdd')), added));
  }
  section.append(card);
}
