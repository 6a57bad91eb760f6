// Signing in: email and password, a one-time link (its token in the URL's fragment, which the
// browser never sends anywhere), and accepting an invitation.

import { h, field } from '../dom.js';
import { t } from '../i18n.js';
import { api, notice, ApiFailure, state } from '../app.js';

function next() {
  const target = new URLSearchParams(location.search).get('next') || '/console';
  return /^\/console(\/|$)/.test(target) ? target : '/console';
}

export async function signInPage(main) {
  const status = h('div', { 'aria-live': 'polite' });
  const params = new URLSearchParams(location.search);
  if (params.get('expired')) status.append(notice('info', t('sessionOver')));
  if (params.get('sso_error')) status.append(notice('error', t(`sso_${params.get('sso_error')}`)));
  let options = { password: true, sso: null };
  try { options = await api('GET', '/admin/v1/sign-in/options'); } catch { /* the form still works */ }
  const email = h('input', { type: 'email', name: 'email', required: true, autocomplete: 'username' });
  const password = h('input', { type: 'password', name: 'password', required: true, autocomplete: 'current-password' });
  const submit = h('button', { type: 'submit' }, t('signIn'));
  const form = h('form', {
    class: 'card narrow', 'aria-labelledby': 'sign-in-title',
    on: {
      submit: async (e) => {
        e.preventDefault();
        submit.disabled = true;
        status.replaceChildren(notice('info', t('signingIn')));
        try {
          await api('POST', '/admin/v1/sign-in', { email: email.value, password: password.value });
          location.assign(next());
        } catch (err) {
          const text = err instanceof ApiFailure && err.code === 'wrong_credentials' ? t('wrongCredentials') : err.message;
          status.replaceChildren(notice('error', text));
          submit.disabled = false;
          password.focus();
        }
      },
    },
  },
  h('h1', { id: 'sign-in-title' }, t('signInTitle')),
  options.sso ? [h('a', { class: 'button wide', href: `${options.sso.start}?next=${encodeURIComponent(next())}` },
    options.sso.label), h('p', { class: 'or' }, t('or'))] : null,
  field(t('email'), email), field(t('password'), password), submit, status,
  h('p', { class: 'hint' }, t('signInHint')));
  main.append(form);
  if (options.sso_by_email) main.append(workEmailForm());
  email.focus();
}

// Teams with their own identity provider: the work email's domain says which one.
function workEmailForm() {
  const work = h('input', { type: 'email', name: 'work-email', required: true, autocomplete: 'email' });
  return h('form', {
    class: 'card narrow', 'aria-labelledby': 'work-sso-title',
    on: {
      submit: (e) => {
        e.preventDefault();
        location.assign(`/admin/v1/oidc/start?${new URLSearchParams({ email: work.value, next: next() })}`);
      },
    },
  }, h('h2', { id: 'work-sso-title' }, t('workSsoTitle')), field(t('workEmail'), work),
  h('button', { type: 'submit' }, t('continueSso')));
}

// `/console/link#<token>`: signs in with the token, then forgets it.
export async function linkPage(main) {
  const token = location.hash.slice(1);
  history.replaceState(null, '', '/console/link');
  main.append(h('h1', {}, t('linkTitle')));
  try {
    await api('POST', '/admin/v1/sign-in/link', { token });
    location.assign('/console');
  } catch (err) {
    main.append(notice('error', err instanceof ApiFailure && err.code === 'link_invalid' ? t('linkInvalid') : err.message));
  }
}

// `/console/invite#<token>`. Someone signed in joins as themselves (the invitation must be for
// their address); anyone else makes a new account with a name and a password. An address that
// already has an account is refused until its owner signs in: the token waits in this tab
// (sessionStorage) while they do, and the sign-in page brings them back here.
const INVITE_KEY = 'hermes-invite';

export async function invitePage(main) {
  const token = location.hash.slice(1) || sessionStorage.getItem(INVITE_KEY) || '';
  sessionStorage.setItem(INVITE_KEY, token);
  history.replaceState(null, '', '/console/invite');
  const status = h('div', { 'aria-live': 'polite' });
  const accept = async (body) => {
    try {
      await api('POST', '/admin/v1/invitations/accept', { token, ...body });
      sessionStorage.removeItem(INVITE_KEY);
      location.assign('/console');
    } catch (err) {
      const signIn = h('a', { class: 'button', href: '/console/sign-in?next=/console/invite' }, t('signIn'));
      const text = err.code === 'link_invalid' ? t('linkInvalid') : err.message;
      status.replaceChildren(notice('error', text), err.code === 'sign_in_required' ? signIn : '');
    }
  };
  const me = await fetch('/admin/v1/me', { credentials: 'same-origin', headers: { accept: 'application/json' } })
    .then((r) => (r.ok ? r.json() : null)).catch(() => null);
  if (me) {
    state.csrf = me.csrf_token;
    main.append(h('section', { class: 'card narrow' }, h('h1', {}, t('inviteTitle')),
      h('p', {}, `${t('inviteAs')} ${me.person.email}`),
      h('button', { type: 'button', on: { click: () => accept({}) } }, t('join')), status));
    return;
  }
  const name = h('input', { type: 'text', name: 'display_name', autocomplete: 'name', maxlength: '200' });
  const password = h('input', { type: 'password', name: 'password', autocomplete: 'new-password', minlength: '12' });
  const form = h('form', {
    class: 'card narrow',
    on: {
      submit: async (e) => {
        e.preventDefault();
        const body = { display_name: name.value };
        if (password.value) body.password = password.value;
        await accept(body);
      },
    },
  },
  h('h1', {}, t('inviteTitle')),
  h('p', { class: 'hint' }, t('inviteHaveAccount')),
  field(t('displayName'), name),
  field(t('newPassword'), password, t('passwordHint')),
  h('button', { type: 'submit' }, t('join')), status);
  main.append(form);
  name.focus();
}
