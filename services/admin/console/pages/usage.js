// Usage: tokens and dollars per day, agent, model or source over a range of days, as bars
// and as a table (the numbers are the table; the bars are a picture of them).

import { h, field } from '../dom.js';
import { t } from '../i18n.js';
import { api } from '../app.js';

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
  const report = await api('GET', `/admin/v1/tenants/${ctx.id}/usage?${query}`);
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
  if (report.lines.length === 0) { section.append(h('p', {}, t('none'))); return; }
  const lines = report.lines;
  section.append(bars(lines, (l) => l.prompt_tokens + l.completion_tokens, t('tokenCount')), bars(lines, (l) => l.cost_usd, t('cost')));
  for (const bar of section.querySelectorAll('.bar')) bar.style.width = `${bar.dataset.width}%`;
  section.append(h('table', {},
    h('caption', {}, t('usage')),
    h('thead', {}, h('tr', {}, [t(`by_${by}`), t('calls'), t('promptTokens'), t('completionTokens'), t('cachedTokens'), t('cost'), t('turnsCount'), t('toolSeconds'), t('sandboxSeconds')]
      .map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, lines.map((l) => h('tr', {},
      h('td', {}, l.key), h('td', {}, number(l.calls)), h('td', {}, number(l.prompt_tokens)), h('td', {}, number(l.completion_tokens)),
      h('td', {}, number(l.cached_tokens)), h('td', {}, dollars(l.cost_usd)), h('td', {}, number(l.turns)),
      h('td', {}, number(Math.round(l.tool_ms / 1000))), h('td', {}, number(Math.round(l.sandbox_ms / 1000))))))));
}
