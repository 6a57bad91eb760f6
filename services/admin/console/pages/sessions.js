// Agents, sessions and transcripts. A transcript is user text, model text and tool output:
// every part is drawn as text (never markup), so a message holding `<script>` or a
// `javascript:` link shows exactly those characters and does nothing.

import { h, when } from '../dom.js';
import { t } from '../i18n.js';
import { api, notice } from '../app.js';

export async function sessionsPage(section, ctx) {
  const offset = Number(new URLSearchParams(location.search).get('offset') || 0);
  const page = await api('GET', `/admin/v1/tenants/${ctx.id}/sessions?limit=50&offset=${offset}`);
  if (page.data.length === 0) { section.append(h('p', {}, t('none'))); return; }
  section.append(h('table', {},
    h('caption', {}, t('sessions')),
    h('thead', {}, h('tr', {}, ['title', 'agent', 'source', 'messages', 'updated'].map((c) => h('th', { scope: 'col' }, t(c))))),
    h('tbody', {}, page.data.map((s) => h('tr', {},
      h('td', {}, h('a', { href: `${ctx.base}/sessions/${s.id}` }, s.title || s.id)), h('td', {}, s.model),
      h('td', {}, s.source), h('td', {}, String(s.message_count)), h('td', {}, when(s.updated_at)))))));
  if (page.has_more) section.append(h('a', { class: 'button', href: `${ctx.base}/sessions?offset=${offset + 50}` }, t('more')));
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
