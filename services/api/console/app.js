// The console: a small set of ES modules over the admin API (`/admin/v1`). Every page is an
// API call first; this file holds the shell (header, language, theme), the API client and the
// router. No build step: the api role serves these files from its binary.

import { h, clear } from './dom.js';
import { t, LANGUAGES, currentLanguage, setLanguage } from './i18n.js';

export const state = { me: null, csrf: null };

export class ApiFailure extends Error {
  constructor(status, body) {
    super(body?.error?.message || `HTTP ${status}`);
    this.status = status;
    this.code = body?.error?.code;
  }
}

// Calls the admin API as this console session: the cookie rides along, and every request that
// changes something carries the session's CSRF token.
export async function api(method, path, body) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && state.csrf) headers['x-csrf-token'] = state.csrf;
  const resp = await fetch(path, {
    method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await resp.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch { parsed = null; }
  if (resp.status === 401 && !path.startsWith('/admin/v1/sign-in') && !path.startsWith('/admin/v1/invitations')) {
    state.me = null;
    location.assign(`/console/sign-in?expired=1&next=${encodeURIComponent(location.pathname)}`);
    throw new ApiFailure(401, parsed);
  }
  if (!resp.ok) throw new ApiFailure(resp.status, parsed);
  return parsed;
}

// GETs the team's lists at `paths` (below /admin/v1/tenants/<id>/) at once, in that order.
export function tenantGets(ctx, ...paths) {
  return Promise.all(paths.map((path) => api('GET', `/admin/v1/tenants/${ctx.id}/${path}`)));
}

// A status line that screen readers announce.
export function notice(kind, text) {
  return h('p', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text);
}

// A button that runs one API call and reloads the page (or shows why not in `status`); with
// `confirmText`, it asks first; `label` names the thing it acts on, for screen readers.
export function actionButton(text, run, status, { danger = false, label = null, confirmText = null } = {}) {
  return h('button', {
    type: 'button', class: danger ? 'danger' : null, 'aria-label': label ? `${text}: ${label}` : null,
    on: {
      click: async (e) => {
        if (confirmText && !confirm(confirmText)) return;
        e.target.disabled = true;
        try {
          await run();
          location.reload();
        } catch (err) {
          status.replaceChildren(notice('error', err.message));
          e.target.disabled = false;
        }
      },
    },
  }, text);
}

// A table's header row: a column heading (scoped, for screen readers) for each i18n key, and
// with `actions` an empty one over a column of buttons.
export function headings(keys, actions = false) {
  return h('thead', {}, h('tr', {}, keys.map((key) => h('th', { scope: 'col' }, t(key))),
    actions ? h('th', { scope: 'col' }, '') : null));
}

// A form's submit handler that runs `run` in the page (no navigation), or shows why it failed
// in `status`.
export function submitting(run, status) {
  return {
    submit: async (e) => {
      e.preventDefault();
      try {
        await run();
      } catch (err) { status.replaceChildren(notice('error', err.message)); }
    },
  };
}

// A form's submit handler that runs one API call and reloads the page (or shows why not in
// `status`).
export function submitThenReload(run, status) {
  return submitting(async () => {
    await run();
    location.reload();
  }, status);
}

function applyTheme() {
  const theme = localStorage.getItem('hermes.theme') || 'auto';
  document.documentElement.dataset.theme = theme;
}

function header() {
  const lang = h('select', {
    'aria-label': t('language'), id: 'language',
    on: { change: (e) => { setLanguage(e.target.value); location.reload(); } },
  }, LANGUAGES.map(([code, label]) => h('option', { value: code, selected: code === currentLanguage() }, label)));
  const theme = h('select', {
    'aria-label': t('theme'), id: 'theme',
    on: { change: (e) => { localStorage.setItem('hermes.theme', e.target.value); applyTheme(); } },
  }, [['auto', t('themeAuto')], ['light', t('themeLight')], ['dark', t('themeDark')]].map(([v, label]) =>
    h('option', { value: v, selected: v === (localStorage.getItem('hermes.theme') || 'auto') }, label)));
  const who = state.me
    ? [h('span', { class: 'who' }, state.me.person.email, state.me.operator ? ` · ${t('operator')}` : ''),
      h('button', { type: 'button', class: 'link', on: { click: signOut } }, t('signOut'))]
    : [];
  return h('header', { class: 'top' },
    h('a', { href: '/console', class: 'brand' }, t('app'), ' ', h('span', {}, t('console'))),
    h('div', { class: 'tools' }, lang, theme, who));
}

async function signOut() {
  try { await api('POST', '/admin/v1/sign-out'); } finally { location.assign('/console/sign-in'); }
}

// Renders a page: `build` gets the main element and fills it (it may be async).
export async function render(build) {
  document.documentElement.lang = currentLanguage() === 'zh' ? 'zh-CN' : 'en';
  const main = h('main', { id: 'main', tabindex: '-1' });
  clear(document.body,
    h('a', { href: '/console#main', class: 'skip' }, t('skipToContent')),
    header(), main);
  try {
    await build(main);
  } catch (e) {
    if (e instanceof ApiFailure && e.status === 401) return;
    main.append(notice('error', `${t('error')}: ${e.message}`));
  }
}

async function loadMe() {
  try {
    const me = await fetch('/admin/v1/me', { credentials: 'same-origin', headers: { accept: 'application/json' } });
    if (!me.ok) return null;
    return await me.json();
  } catch { return null; }
}

async function route() {
  applyTheme();
  const path = location.pathname.replace(/\/+$/, '');
  const auth = await import('./pages/auth.js');
  if (path === '/console/link') return render(auth.linkPage);
  if (path === '/console/invite') return render(auth.invitePage);
  if (path === '/console/sign-in') return render(auth.signInPage);
  state.me = await loadMe();
  if (!state.me) {
    location.assign(`/console/sign-in?next=${encodeURIComponent(location.pathname)}`);
    return undefined;
  }
  state.csrf = state.me.csrf_token;
  const tenant = path.match(/^\/console\/t\/([0-9a-f-]{36})(?:\/([a-z]+))?(?:\/([0-9a-f-]{36}))?$/);
  if (tenant) {
    const pages = await import('./pages/tenant.js');
    return render((main) => pages.tenantPage(main, tenant[1], tenant[2] || 'overview', tenant[3]));
  }
  const home = await import('./pages/home.js');
  return render(home.homePage);
}

route();
