// Agents, sessions and transcripts. A transcript is user text, model text and tool output:
// every part is drawn as text (never markup), so a message holding `<script>` or a
// `javascript:` link shows exactly those characters and does nothing.

import { h, when, field } from '../dom.js';
import { t } from '../i18n.js';
import { api, headings, notice, submitThenReload } from '../app.js';

const SOURCES = ['api', 'cron', 'webhook', 'telegram', 'slack', 'wecom'];

// Every session of the team, narrowed by agent and source, or found by what was said in it
// (best match first, with the matching words in context).
export async function sessionsPage(section, ctx) {
  const params = new URLSearchParams(location.search);
  const offset = Number(params.get('offset') || 0);
  const query = new URLSearchParams({ limit: '50', offset: String(offset) });
  for (const key of ['q', 'agent', 'source']) if (params.get(key)) query.set(key, params.get(key));
  const [agents, page] = await Promise.all([
    api('GET', `/admin/v1/tenants/${ctx.id}/agents`),
    api('GET', `/admin/v1/tenants/${ctx.id}/sessions?${query}`).catch((err) => ({ error: err.message, data: [] })),
  ]);
  const q = h('input', { type: 'search', value: params.get('q') || '', placeholder: t('searchHint') });
  const agent = h('select', {}, h('option', { value: '' }, t('anyAgent')),
    agents.data.map((a) => h('option', { value: a.name, selected: a.name === params.get('agent') }, a.name)));
  const source = h('select', {}, h('option', { value: '' }, t('anySource')),
    SOURCES.map((s) => h('option', { value: s, selected: s === params.get('source') }, s)));
  section.append(h('form', {
    class: 'filters', role: 'search',
    on: {
      submit: (e) => {
        e.preventDefault();
        const next = new URLSearchParams();
        for (const [key, control] of [['q', q], ['agent', agent], ['source', source]]) if (control.value) next.set(key, control.value);
        location.assign(`${ctx.base}/sessions?${next}`);
      },
    },
  }, field(t('searchWords'), q), field(t('agent'), agent), field(t('source'), source), h('button', { type: 'submit' }, t('search'))));
  if (page.error) { section.append(notice('error', page.error)); return; }
  if (page.data.length === 0) { section.append(h('p', {}, t('none'))); return; }
  const searching = Boolean(query.get('q'));
  const columns = ['title', 'agent', 'source', 'messages', 'updated'].concat(searching ? ['match'] : []);
  section.append(h('table', {},
    h('caption', {}, t('sessions')),
    headings(columns),
    h('tbody', {}, page.data.map((s) => h('tr', { 'data-testid': 'session-row' },
      h('td', {}, h('a', { href: `${ctx.base}/sessions/${s.id}` }, s.title || s.id)), h('td', {}, s.model),
      h('td', {}, s.source), h('td', {}, String(s.message_count)), h('td', {}, when(s.updated_at)),
      searching ? h('td', { class: 'snippet' }, s.snippet || '') : null)))));
  if (page.has_more) {
    query.set('offset', String(offset + 50));
    query.delete('limit');
    section.append(h('a', { class: 'button', href: `${ctx.base}/sessions?${query}` }, t('more')));
  }
}

// The text of a message's content: a string, or parts of which text is shown and the rest named.
function contentText(content) {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((part) => (part.type === 'text' ? part.text : `[${part.type}]`)).join('\n');
  }
  return JSON.stringify(content);
}

function message(m) {
  const calls = (m.tool_calls || []).map((c) => h('pre', { class: 'tool-call' }, `${c.function?.name}(${c.function?.arguments || ''})`));
  return h('article', { class: `msg role-${m.role}`, 'data-testid': 'message' },
    h('header', {}, h('strong', {}, m.role), m.name ? ` · ${m.name}` : ''),
    h('pre', { class: 'text' }, contentText(m.content)), calls);
}

export async function transcriptPage(section, ctx, sessionId) {
  const found = await api('GET', `/admin/v1/tenants/${ctx.id}/sessions/${sessionId}?limit=500`);
  section.append(
    h('p', {}, h('a', { href: `${ctx.base}/sessions` }, `← ${t('back')}`), ' · ',
      h('a', { href: `/admin/v1/tenants/${ctx.id}/sessions/${sessionId}/export`, download: `session-${sessionId}.json` }, t('exportJson'))),
    h('h2', {}, found.session.title || t('transcript')),
    await goalPanel(ctx, sessionId),
    h('div', { class: 'transcript' }, found.messages.map(message)));
  if (ctx.may('sessions.manage')) {
    const status = h('div', { 'aria-live': 'polite' });
    section.append(h('button', {
      type: 'button', class: 'danger',
      on: {
        click: async () => {
          if (!confirm(t('confirmDelete'))) return;
          try {
            await api('DELETE', `/admin/v1/tenants/${ctx.id}/sessions/${sessionId}`);
            location.assign(`${ctx.base}/sessions`);
          } catch (err) { status.replaceChildren(notice('error', err.message)); }
        },
      },
    }, t('deleteSession')), status);
  }
}

// The session's standing goal: where it stands, and (for who may manage sessions) a form to
// set one and buttons to pause, resume or drop it. Its text is drawn as text.
async function goalPanel(ctx, sessionId) {
  const path = `/admin/v1/tenants/${ctx.id}/sessions/${sessionId}/goal`;
  const goal = await api('GET', path).catch(() => null);
  const status = h('div', { 'aria-live': 'polite' });
  const shown = goal
    ? h('p', { 'data-testid': 'goal' }, h('strong', {}, `${t('goal')}: `), goal.goal, ` (${t(`goal_${goal.state}`)}, `,
      `${goal.turns_used}/${goal.max_turns} ${t('turnsUsed')})`, goal.last_reason ? ` · ${goal.last_reason}` : '')
    : h('p', { 'data-testid': 'goal' }, t('noGoal'));
  if (!ctx.may('sessions.manage')) return h('section', { class: 'goal' }, shown);
  const act = (label, run) => h('button', {
    type: 'button',
    on: { click: async () => { try { await run(); location.reload(); } catch (err) { status.replaceChildren(notice('error', err.message)); } } },
  }, label);
  const controls = !goal ? [] : [
    goal.state === 'active'
      ? act(t('pauseGoal'), () => api('PATCH', path, { state: 'paused' }))
      : act(t('resumeGoal'), () => api('PATCH', path, { state: 'active' })),
    act(t('clearGoal'), () => api('DELETE', path)),
  ];
  const text = h('textarea', { name: 'goal', rows: 2, required: true, 'aria-label': t('goal') });
  const form = h('form', {
    class: 'filters',
    on: submitThenReload(() => api('PUT', path, { goal: text.value }), status),
  }, field(t('newGoal'), text), h('button', { type: 'submit' }, t('setGoal')));
  return h('section', { class: 'goal' }, shown, ...controls, form, status);
}
