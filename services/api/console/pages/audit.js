// The audit log: filters, pages of 50 (newest first), and exports of everything that matches.

import { h, field, when } from '../dom.js';
import { t } from '../i18n.js';
import { api, headings } from '../app.js';

function summary(entry) {
  const show = (v) => (v === null || v === undefined ? '' : JSON.stringify(v));
  const before = show(entry.before);
  const after = show(entry.after);
  if (!before && !after) return '';
  return h('details', {}, h('summary', {}, t('change')),
    before ? h('pre', { class: 'json' }, `- ${before}`) : null, after ? h('pre', { class: 'json' }, `+ ${after}`) : null);
}

export async function auditPage(section, ctx) {
  const params = new URLSearchParams(location.search);
  const action = h('input', { type: 'text', name: 'action', value: params.get('action') || '' });
  const actor = h('input', { type: 'text', name: 'actor', value: params.get('actor') || '' });
  section.append(h('form', { class: 'filters', on: { submit: (e) => { e.preventDefault(); go(); } } },
    field(t('filterAction'), action), field(t('filterActor'), actor), h('button', { type: 'submit' }, t('apply'))));
  const go = () => {
    const q = new URLSearchParams();
    if (action.value) q.set('action', action.value);
    if (actor.value) q.set('actor', actor.value);
    location.assign(`${ctx.base}/audit?${q}`);
  };
  const query = new URLSearchParams();
  for (const key of ['action', 'actor', 'cursor']) if (params.get(key)) query.set(key, params.get(key));
  const base = `/admin/v1/tenants/${ctx.id}/audit`;
  const exportQuery = new URLSearchParams(query);
  exportQuery.delete('cursor');
  exportQuery.set('format', 'csv');
  const csv = `${base}?${exportQuery}`;
  exportQuery.set('format', 'jsonl');
  section.append(h('p', { class: 'exports' },
    h('a', { href: csv, download: 'audit.csv' }, t('exportCsv')), ' · ',
    h('a', { href: `${base}?${exportQuery}`, download: 'audit.jsonl' }, t('exportJsonl'))));
  const page = await api('GET', `${base}?${query}`);
  if (page.data.length === 0) { section.append(h('p', {}, t('none'))); return; }
  section.append(h('table', { class: 'audit' },
    h('caption', {}, t('audit')),
    headings(['when', 'who', 'what', 'object', 'change', 'address']),
    h('tbody', {}, page.data.map((e) => h('tr', {},
      h('td', {}, when(e.at)), h('td', {}, e.actor.label || e.actor.id), h('td', {}, h('code', {}, e.action)),
      h('td', {}, `${e.object_kind} ${e.object_id}`), h('td', {}, summary(e)), h('td', {}, e.source_address || ''))))));
  if (page.next) {
    const q = new URLSearchParams(query);
    q.set('cursor', page.next);
    section.append(h('a', { class: 'button', href: `${ctx.base}/audit?${q}` }, t('more')));
  }
}
