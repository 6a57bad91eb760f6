// The first page after signing in: the caller's teams, and for operators the cluster (backlog,
// workers, live sandboxes), every team and a form to create one.

import { h, field, when } from '../dom.js';
import { t, roleName } from '../i18n.js';
import { api, headings, state, notice, submitting } from '../app.js';

export async function homePage(main) {
  main.append(h('h1', {}, t('yourTeams')));
  const mine = state.me.memberships;
  main.append(mine.length === 0
    ? h('p', {}, t('noTeams'))
    : h('ul', { class: 'teams' }, mine.map((m) => h('li', {},
      h('a', { href: `/console/t/${m.tenant_id}` }, m.tenant_name), ' ', h('span', { class: 'badge' }, roleName(m.role))))));
  if (!state.me.operator) return;

  const cluster = await api('GET', '/admin/v1/cluster');
  main.append(h('h2', {}, t('cluster')), h('dl', { class: 'facts', 'data-testid': 'cluster' },
    h('dt', {}, t('turnsQueued')), h('dd', {}, String(cluster.turns_queued)),
    h('dt', {}, t('oldestQueued')), h('dd', {}, String(Math.round(cluster.oldest_queued_seconds))),
    h('dt', {}, t('turnsRunning')), h('dd', {}, String(cluster.turns_running)),
    h('dt', {}, t('outboxWaiting')), h('dd', {}, String(cluster.outbox_waiting)),
    h('dt', {}, t('cronLate')), h('dd', {}, String(cluster.cron_jobs_late))));
  if (cluster.workers.length > 0) {
    main.append(h('table', {}, h('caption', {}, t('workers')),
      headings(['worker', 'turnsRunning', 'leaseUntil']),
      h('tbody', {}, cluster.workers.map((w) => h('tr', {}, h('td', {}, w.worker), h('td', {}, String(w.turns)), h('td', {}, when(w.lease_expires_at)))))));
  }
  main.append(h('h2', {}, t('sandboxes')), h('p', { class: 'hint' }, t('sandboxesHint')));
  main.append(cluster.sandboxes.length === 0 ? h('p', {}, t('none')) : h('table', { 'data-testid': 'sandboxes' },
    headings(['name', 'backend', 'tenants', 'agent', 'busy', 'idle', 'worker']),
    h('tbody', {}, cluster.sandboxes.map((s) => h('tr', {},
      h('td', {}, h('code', {}, s.name)), h('td', {}, s.backend),
      h('td', {}, h('a', { href: `/console/t/${s.tenant_id}` }, s.tenant_id.slice(0, 8))), h('td', {}, s.agent_id.slice(0, 8)),
      h('td', {}, `${s.running_execs} / ${s.running_processes}`), h('td', {}, `${s.idle_secs} s`), h('td', {}, s.worker))))));
  main.append(h('h2', {}, t('allTenants')));
  const list = await api('GET', '/admin/v1/tenants?limit=500');
  main.append(h('table', {},
    headings(['name', 'created']),
    h('tbody', {}, list.data.map((tenant) => h('tr', {},
      h('td', {}, h('a', { href: `/console/t/${tenant.id}` }, tenant.name)), h('td', {}, when(tenant.created_at)))))));

  const name = h('input', { type: 'text', required: true, maxlength: '63' });
  const owner = h('input', { type: 'email' });
  const status = h('div', { 'aria-live': 'polite' });
  main.append(h('form', {
    class: 'card',
    on: submitting(async () => {
      const body = { name: name.value };
      if (owner.value) body.owner_email = owner.value;
      const made = await api('POST', '/admin/v1/tenants', body);
      status.replaceChildren(notice('ok', t('done')));
      if (made.owner_invitation_link) {
        status.append(h('p', {}, t('inviteLink')), h('code', { class: 'secret' }, made.owner_invitation_link));
      }
    }, status),
  }, h('h2', {}, t('createTenant')), field(t('name'), name), field(t('ownerEmail'), owner),
  h('button', { type: 'submit' }, t('create')), status));
}
