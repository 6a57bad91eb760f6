// Turns as they happen: the open turns (stop one), and one turn's events streamed over SSE
// (the answer as it is written, tools starting and finishing). Every piece is text.

import { h, when } from '../dom.js';
import { t } from '../i18n.js';
import { api, headings, notice } from '../app.js';

function stopButton(ctx, turn, status) {
  return h('button', {
    type: 'button', class: 'danger', 'aria-label': `${t('stop')}: ${turn.input || turn.id}`,
    on: {
      click: async (e) => {
        e.target.disabled = true;
        try {
          const done = await api('POST', `/admin/v1/tenants/${ctx.id}/turns/${turn.id}/stop`);
          status.replaceChildren(notice('ok', t(`stop_${done.status}`)));
        } catch (err) { status.replaceChildren(notice('error', err.message)); e.target.disabled = false; }
      },
    },
  }, t('stop'));
}

export async function liveList(section, ctx) {
  const turns = await api('GET', `/admin/v1/tenants/${ctx.id}/turns`);
  const status = h('div', { 'aria-live': 'polite' });
  section.append(h('p', {}, h('button', { type: 'button', on: { click: () => location.reload() } }, t('refresh'))));
  if (turns.data.length === 0) { section.append(h('p', {}, t('noRunning')), status); return; }
  section.append(h('table', {},
    h('caption', {}, t('live')),
    headings(['input', 'agent', 'status', 'created'], true),
    h('tbody', {}, turns.data.map((turn) => h('tr', {},
      h('td', {}, h('a', { href: `${ctx.base}/live/${turn.id}` }, turn.input || turn.id)), h('td', {}, turn.agent),
      h('td', {}, turn.stopping ? t('stopping') : turn.status), h('td', {}, when(turn.created_at)),
      h('td', {}, ctx.may('sessions.manage') && !turn.stopping ? stopButton(ctx, turn, status) : null))))), status);
}

export async function liveTurn(section, ctx, turnId) {
  const answer = h('pre', { class: 'text live-answer', 'data-testid': 'live-answer', 'aria-live': 'polite' });
  const tools = h('ul', { class: 'tools-progress', 'data-testid': 'live-tools' });
  const state = h('p', { class: 'badge', 'data-testid': 'live-state' }, t('watching'));
  const status = h('div', { 'aria-live': 'polite' });
  section.append(h('p', {}, h('a', { href: `${ctx.base}/live` }, `← ${t('back')}`)),
    h('h2', {}, t('liveTurn')), state,
    ctx.may('sessions.manage') ? stopButton(ctx, { id: turnId }, status) : null, status,
    h('article', { class: 'msg role-assistant' }, h('header', {}, h('strong', {}, 'assistant')), answer), tools);
  const source = new EventSource(`/admin/v1/tenants/${ctx.id}/turns/${turnId}/events`);
  const items = new Map();
  source.onmessage = (message) => {
    let ev;
    try { ev = JSON.parse(message.data); } catch { return; }
    switch (ev.type) {
      case 'history':
        state.textContent = t('running');
        for (const m of ev.messages || []) {
          for (const call of m.tool_calls || []) {
            const li = h('li', {}, h('code', {}, call.function?.name || ''), ' …');
            items.set(call.id, li);
            tools.append(li);
          }
          if (m.role === 'tool' && items.has(m.tool_call_id)) {
            const li = items.get(m.tool_call_id);
            li.replaceChildren(h('code', {}, li.querySelector('code')?.textContent || ''), ' ✓');
          }
        }
        break;
      case 'started': state.textContent = t('running'); break;
      case 'delta': answer.append(document.createTextNode(ev.text)); break;
      case 'tool_started': {
        const li = h('li', {}, h('code', {}, ev.tool), ` ${ev.preview || ''} …`);
        items.set(ev.call_id, li);
        tools.append(li);
        break;
      }
      case 'tool_completed': {
        const li = items.get(ev.call_id) || h('li', {});
        li.replaceChildren(h('code', {}, ev.tool), ` ${ev.ok ? '✓' : '✗'} ${ev.duration_ms} ms`);
        if (!items.has(ev.call_id)) tools.append(li);
        break;
      }
      case 'waiting': state.textContent = t('waitingAnswer'); source.close(); break;
      case 'finished': {
        const outcome = ev.outcome || {};
        const code = outcome.error_code;
        state.textContent = code === 'cancelled' ? t('stopped') : (ev.status || (code ? t('failed') : t('completed')));
        if (!answer.textContent && outcome.content) answer.textContent = outcome.content;
        source.close();
        break;
      }
      default: break;
    }
  };
  source.onerror = () => { if (source.readyState === EventSource.CLOSED) state.textContent = t('ended'); };
}
