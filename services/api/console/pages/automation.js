// Unattended work: cron jobs (next run, last outcome, run now, pause, resume, recent runs) and
// hooks (webhook triggers; event endpoints with their deliveries, a test event, and sending a
// settled event again). Jobs and
// hooks are made through the API or in chat; here they are watched and steered.

import { h, when } from '../dom.js';
import { t } from '../i18n.js';
import { api, tenantGets, headings, notice, actionButton } from '../app.js';

export async function automationPage(section, ctx) {
  const [jobs, hooks] = await tenantGets(ctx, 'cron', 'hooks');
  const status = h('div', { 'aria-live': 'polite' });
  const manage = ctx.may('cron.manage');
  section.append(h('h2', {}, t('cronJobs')));
  if (jobs.data.length === 0) section.append(h('p', {}, t('none')));
  else {
    section.append(h('table', {},
      headings(['name', 'schedule', 'status', 'nextRun', 'lastRun', 'lastOutcome'], true),
      h('tbody', {}, jobs.data.map((j) => h('tr', { 'data-testid': 'cron-job' },
        h('td', {}, j.name), h('td', {}, j.schedule_display), h('td', {}, j.state), h('td', {}, when(j.next_run_at)),
        h('td', {}, when(j.last_run_at)), h('td', {}, j.last_status || ''),
        h('td', {}, manage ? [
          actionButton(t('runNow'), () => api('POST', `/admin/v1/tenants/${ctx.id}/cron/${j.id}/run`), status), ' ',
          j.state === 'paused'
            ? actionButton(t('resume'), () => api('POST', `/admin/v1/tenants/${ctx.id}/cron/${j.id}/resume`), status)
            : actionButton(t('pause'), () => api('POST', `/admin/v1/tenants/${ctx.id}/cron/${j.id}/pause`), status),
        ] : null))))));
  }
  section.append(status, h('h2', {}, t('webhooks')));
  if (hooks.webhooks.length === 0) section.append(h('p', {}, t('none')));
  else {
    section.append(h('table', {},
      headings(['name', 'path', 'deliver']),
      h('tbody', {}, hooks.webhooks.map((w) => h('tr', {}, h('td', {}, w.name), h('td', {}, h('code', {}, `/hooks/${w.id}`)), h('td', {}, w.deliver || ''))))));
  }
  section.append(h('h2', {}, t('eventHooks')));
  if (hooks.event_hooks.length === 0) { section.append(h('p', {}, t('none'))); return; }
  for (const e of hooks.event_hooks) {
    const list = await api('GET', `/admin/v1/tenants/${ctx.id}/hooks/${e.id}/deliveries`);
    section.append(h('article', { class: 'card' },
      h('h3', {}, e.url),
      ctx.may('hooks.manage') ? actionButton(t('sendTest'), () => api('POST', `/admin/v1/tenants/${ctx.id}/hooks/${e.id}/ping`), status) : null,
      list.data.length === 0 ? h('p', { class: 'hint' }, t('none')) : h('table', {},
        headings(['event', 'status', 'attempts', 'lastAnswer', 'when'], true),
        h('tbody', {}, list.data.map((d) => h('tr', { 'data-testid': 'delivery' },
          h('td', {}, d.event), h('td', {}, d.status), h('td', {}, String(d.attempts)),
          h('td', {}, [d.last_status ? String(d.last_status) : '', d.last_error ? ` ${d.last_error}` : '']),
          h('td', {}, when(d.created_at)),
          // A settled event can be sent again, under the same id (receivers can tell).
          h('td', {}, ctx.may('hooks.manage') && d.status !== 'pending'
            ? actionButton(t('resend'), () => api('POST', `/admin/v1/tenants/${ctx.id}/hooks/${e.id}/deliveries/${d.id}/resend`), status, { label: d.event })
            : null)))))));
  }
}

export async function approvalsPage(section, ctx) {
  const list = await api('GET', `/admin/v1/tenants/${ctx.id}/approvals`);
  const status = h('div', { 'aria-live': 'polite' });
  if (list.data.length === 0) { section.append(h('p', {}, t('noApprovals')), status); return; }
  for (const q of list.data) {
    const what = q.prompt.command || q.prompt.question || JSON.stringify(q.prompt);
    const why = q.prompt.description || q.prompt.reason || '';
    const answer = (body) => api('POST', `/admin/v1/tenants/${ctx.id}/approvals/${q.id}`, body);
    const answers = q.kind === 'approval'
      ? ['once', 'session', 'always', 'deny'].map((choice) => actionButton(t(`choice_${choice}`), () => answer({ choice }), status))
      : [(() => {
        const text = h('input', { type: 'text', 'aria-label': t('yourAnswer') });
        return h('form', { class: 'filters', on: { submit: async (e) => { e.preventDefault(); await answer({ text: text.value }); location.reload(); } } },
          text, h('button', { type: 'submit' }, t('answer')));
      })()];
    section.append(h('article', { class: 'card', 'data-testid': 'approval' },
      h('h3', {}, `${q.agent} · ${t(`kind_${q.kind}`)}`),
      h('pre', { class: 'text' }, what), why ? h('p', {}, why) : null,
      h('p', { class: 'hint' }, t('expires'), ' ', when(q.expires_at)),
      ctx.may('approvals.answer') ? h('p', {}, answers) : null));
  }
  section.append(status);
}
