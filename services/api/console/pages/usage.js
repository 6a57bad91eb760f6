// Usage: tokens and dollars per day, agent, model or source over a range of days, as bars
// and as a table (the numbers are the table; the bars are a picture of them); and the spending
// caps, with what each period has spent so far.

import { h, field } from '../dom.js';
import { t } from '../i18n.js';
import { api, tenantGets, headings, actionButton, submitThenReload } from '../app.js';

const number = (n) => new Intl.NumberFormat(document.documentElement.lang || undefined).format(n);
const dollars = (n) => new Intl.NumberFormat(document.documentElement.lang || undefined, { style: 'currency', currency: 'USD', maximumFractionDigits: 4 }).format(n);

function bars(lines, value, label) {
  const max = Math.max(...lines.map(value), 0) || 1;
  return h('figure', { class: 'bars' }, h('figcaption', {}, label),
    lines.map((l) => h('div', { class: 'bar-row' },
      h('span', { class: 'bar-key' }, l.key),
      h('span', { class: 'bar', 'data-width': Math.round((value(l) / max) * 100) }),
      h('span', { class: 'bar-value' }, label === t('cost') ? dollars(value(l)) : number(value(l))))));
}

export async function usagePage(section, ctx) {
  const params = new URLSearchParams(location.search);
  const by = params.get('by') || 'day';
  const query = new URLSearchParams({ by });
  for (const key of ['from', 'to']) if (params.get(key)) query.set(key, params.get(key));
  const [report, budgets, agents] = await tenantGets(ctx, `usage?${query}`, 'budgets', 'agents');
  const caps = budgetSection(ctx, budgets.data, agents.data);
  const from = h('input', { type: 'date', value: report.from });
  const to = h('input', { type: 'date', value: report.to });
  const group = h('select', {}, ['day', 'agent', 'model', 'source'].map((g) => h('option', { value: g, selected: g === by }, t(`by_${g}`))));
  section.append(h('form', {
    class: 'filters',
    on: { submit: (e) => { e.preventDefault(); location.assign(`${ctx.base}/usage?${new URLSearchParams({ from: from.value, to: to.value, by: group.value })}`); } },
  }, field(t('from'), from), field(t('to'), to), field(t('groupBy'), group), h('button', { type: 'submit' }, t('apply'))));
  const total = report.total;
  section.append(h('dl', { class: 'facts' },
    h('dt', {}, t('cost')), h('dd', { 'data-testid': 'usage-cost' }, dollars(total.cost_usd)),
    h('dt', {}, t('tokenCount')), h('dd', {}, number(total.prompt_tokens + total.completion_tokens)),
    h('dt', {}, t('turnsCount')), h('dd', {}, number(total.turns)),
    h('dt', {}, t('calls')), h('dd', {}, number(total.calls))));
  if (report.lines.length === 0) { section.append(h('p', {}, t('none')), caps); return; }
  const lines = report.lines;
  section.append(bars(lines, (l) => l.prompt_tokens + l.completion_tokens, t('tokenCount')), bars(lines, (l) => l.cost_usd, t('cost')));
  for (const bar of section.querySelectorAll('.bar')) bar.style.width = `${bar.dataset.width}%`;
  section.append(h('table', {},
    h('caption', {}, t('usage')),
    headings([`by_${by}`, 'calls', 'promptTokens', 'completionTokens', 'cachedTokens', 'cost', 'turnsCount', 'toolSeconds', 'sandboxSeconds']),
    h('tbody', {}, lines.map((l) => h('tr', {},
      h('td', {}, l.key), h('td', {}, number(l.calls)), h('td', {}, number(l.prompt_tokens)), h('td', {}, number(l.completion_tokens)),
      h('td', {}, number(l.cached_tokens)), h('td', {}, dollars(l.cost_usd)), h('td', {}, number(l.turns)),
      h('td', {}, number(Math.round(l.tool_ms / 1000))), h('td', {}, number(Math.round(l.sandbox_ms / 1000))))))), caps);
}

// The caps: a row each (the team's first), a meter of the period's spend, and a form to set one.
function budgetSection(ctx, caps, agents) {
  const nameOf = (id) => (id ? (agents.find((a) => a.id === id)?.name || id) : t('wholeTeam'));
  const status = h('div', { 'aria-live': 'polite' });
  const manage = ctx.may('budgets.manage');
  const out = h('section', { 'aria-label': t('budgets') }, h('h2', {}, t('budgets')));
  if (caps.length === 0) out.append(h('p', { class: 'hint' }, t('noBudgets')));
  else {
    out.append(h('table', {},
      headings(['budgetScope', 'period', 'spentNow', 'hardCap', 'softCap'], true),
      h('tbody', {}, caps.map((c) => {
        const scope = c.agent_id ? nameOf(c.agent_id) : 'tenant';
        const cap = c.hard_usd ?? c.soft_usd;
        return h('tr', { 'data-testid': 'budget' },
          h('td', {}, nameOf(c.agent_id)), h('td', {}, t(`period_${c.period}`)),
          h('td', {}, dollars(c.spent_usd), ' ',
            cap ? h('meter', { min: 0, max: cap, value: Math.min(c.spent_usd, cap), 'aria-label': t('spentNow') }) : null,
            c.hard_reached ? h('strong', { class: 'notice error' }, ` ${t('capReached')}`) : null),
          h('td', {}, c.hard_usd === null ? '—' : dollars(c.hard_usd)), h('td', {}, c.soft_usd === null ? '—' : dollars(c.soft_usd)),
          h('td', {}, manage ? actionButton(t('remove'), () => api('DELETE', `/admin/v1/tenants/${ctx.id}/budgets/${encodeURIComponent(scope)}/${c.period}`), status, { danger: true, label: `${nameOf(c.agent_id)} ${c.period}` }) : null));
      }))));
  }
  if (!manage) return out;
  const scope = h('select', {}, h('option', { value: 'tenant' }, t('wholeTeam')), agents.map((a) => h('option', { value: a.name }, a.name)));
  const period = h('select', {}, ['day', 'month'].map((p) => h('option', { value: p }, t(`period_${p}`))));
  const amount = () => h('input', { type: 'number', min: 0, step: '0.01' });
  const hard = amount();
  const soft = amount();
  const money = (input) => (input.value === '' ? null : Number(input.value));
  const save = () => api('PUT', `/admin/v1/tenants/${ctx.id}/budgets/${encodeURIComponent(scope.value)}/${period.value}`,
    { hard_usd: money(hard), soft_usd: money(soft) });
  out.append(h('form', {
    class: 'filters', on: submitThenReload(save, status),
  }, field(t('budgetScope'), scope), field(t('period'), period), field(t('hardCap'), hard, t('hardCapHint')),
  field(t('softCap'), soft, t('softCapHint')), h('button', { type: 'submit' }, t('setBudget'))), status);
  return out;
}
