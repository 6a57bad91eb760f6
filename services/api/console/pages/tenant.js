// One team's pages: a tab bar and the page asked for. What the caller may change comes from
// the API (`may`); controls for anything else are not drawn at all.

import { h, field } from '../dom.js';
import { t, roleName } from '../i18n.js';
import { api, tenantGets, submitThenReload } from '../app.js';

const TABS = [
  ['overview', 'overview'], ['agents', 'agents'], ['live', 'live'], ['approvals', 'approvals'], ['sessions', 'sessions'],
  ['channels', 'channels'], ['automation', 'automation'], ['members', 'members'],
  ['keys', 'keys'], ['providers', 'providers'], ['tokens', 'tokens'], ['usage', 'usage'], ['audit', 'audit'],
];

export async function tenantPage(main, tenantId, page, itemId) {
  const view = await api('GET', `/admin/v1/tenants/${tenantId}`);
  const ctx = { id: tenantId, view, may: (op) => view.may.includes(op), base: `/console/t/${tenantId}` };
  const visible = TABS.filter(([name]) => name !== 'audit' || ctx.may('audit.view'));
  main.append(
    h('h1', {}, view.tenant.name),
    h('nav', { class: 'tabs', 'aria-label': t('tenants') }, visible.map(([name, label]) =>
      h('a', { href: name === 'overview' ? ctx.base : `${ctx.base}/${name}`, 'aria-current': name === tabOf(page) ? 'page' : null }, t(label)))));
  const readOnly = !view.may.some((op) => !op.endsWith('.view'));
  if (readOnly) main.append(h('p', { class: 'notice info', role: 'note' }, t('readOnly')));
  const section = h('section', { 'aria-label': t(page) });
  main.append(section);
  switch (page) {
    case 'members': return (await import('./people.js')).membersPage(section, ctx);
    case 'keys': return (await import('./credentials.js')).keysPage(section, ctx);
    case 'tokens': return (await import('./credentials.js')).tokensPage(section, ctx);
    case 'audit': return (await import('./audit.js')).auditPage(section, ctx);
    case 'usage': return (await import('./usage.js')).usagePage(section, ctx);
    case 'providers': return (await import('./providers.js')).providersPage(section, ctx);
    case 'channels': return (await import('./channels.js')).channelsPage(section, ctx);
    case 'automation': return (await import('./automation.js')).automationPage(section, ctx);
    case 'approvals': return (await import('./automation.js')).approvalsPage(section, ctx);
    case 'sessions': return itemId
      ? (await import('./sessions.js')).transcriptPage(section, ctx, itemId)
      : (await import('./sessions.js')).sessionsPage(section, ctx);
    case 'agents': return (await import('./agents.js')).agentsPage(section, ctx);
    case 'memory': return (await import('./agents.js')).memoryPage(section, ctx, itemId);
    case 'skills': return (await import('./skills.js')).skillsPage(section, ctx, itemId);
    case 'agent': return (await import('./agents.js')).agentPage(section, ctx, itemId);
    case 'live': return itemId
      ? (await import('./live.js')).liveTurn(section, ctx, itemId)
      : (await import('./live.js')).liveList(section, ctx);
    default: return overview(section, ctx);
  }
}

// The tab a page belongs to (an agent's memory is under Agents).
function tabOf(page) {
  return ['memory', 'skills', 'agent'].includes(page) ? 'agents' : page;
}

async function overview(section, ctx) {
  const { view } = ctx;
  const quota = (v) => (v === null || v === undefined ? t('default') : String(v));
  const [today, turns, budgets] = await tenantGets(ctx,
    `usage?by=source&from=${new Date().toISOString().slice(0, 10)}`, 'turns', 'budgets');
  // The team's daily cap, counted in its own time zone by the server.
  const daily = budgets.data.find((b) => b.agent_id === null && b.period === 'day');
  const cap = daily ? (daily.hard_usd ?? daily.soft_usd) : null;
  const money = new Intl.NumberFormat(document.documentElement.lang || undefined, { style: 'currency', currency: 'USD', maximumFractionDigits: 4 });
  section.append(h('dl', { class: 'facts' },
    h('dt', {}, t('standing')), h('dd', {}, view.standing === 'operator' ? t('operator') : roleName(view.standing)),
    h('dt', {}, t('openTurns')), h('dd', { 'data-testid': 'open-turns' }, h('a', { href: `${ctx.base}/live` }, String(turns.data.length))),
    h('dt', {}, `${t('todayUsage')}: ${t('turnsCount')}`), h('dd', {}, String(today.total.turns)),
    h('dt', {}, `${t('todayUsage')}: ${t('cost')}`), h('dd', { 'data-testid': 'spend-today' },
      cap === null ? money.format(today.total.cost_usd)
        : [`${money.format(daily.spent_usd)} / ${money.format(cap)} `, h('a', { href: `${ctx.base}/usage` }, t('dailyCap'))]),
    h('dt', {}, t('rpm')), h('dd', {}, quota(view.quotas.requests_per_minute)),
    h('dt', {}, t('turns')), h('dd', {}, quota(view.quotas.concurrent_turns)),
    h('dt', {}, t('webSearches')), h('dd', {}, quota(view.quotas.web_searches_per_day)),
    h('dt', {}, t('webPages')), h('dd', {}, quota(view.quotas.web_extracts_per_day))));
  if (ctx.may('tenants.quotas')) section.append(quotaForm(ctx));
}

// Operators set a team's quotas: empty is the installation's default, 0 is unlimited.
function quotaForm(ctx) {
  const number = (value) => h('input', { type: 'number', min: 0, step: 1, value: value ?? '' });
  const rpm = number(ctx.view.quotas.requests_per_minute);
  const turns = number(ctx.view.quotas.concurrent_turns);
  const searches = number(ctx.view.quotas.web_searches_per_day);
  const pages = number(ctx.view.quotas.web_extracts_per_day);
  const status = h('div', { 'aria-live': 'polite' });
  const read = (input) => (input.value === '' ? null : Number(input.value));
  const save = () => api('PUT', `/admin/v1/tenants/${ctx.id}/quotas`, {
    requests_per_minute: read(rpm), concurrent_turns: read(turns),
    web_searches_per_day: read(searches), web_extracts_per_day: read(pages),
  });
  return h('form', {
    class: 'card', on: submitThenReload(save, status),
  }, h('h2', {}, t('quotas')), field(t('rpm'), rpm, t('quotaHint')), field(t('turns'), turns, t('quotaHint')),
  field(t('webSearches'), searches, t('quotaHint')), field(t('webPages'), pages, t('quotaHint')),
  h('button', { type: 'submit' }, t('save')), status);
}
