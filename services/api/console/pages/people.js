// Members, invitations, and the team's single sign-on.

import { h, field, when } from '../dom.js';
import { t, roleName } from '../i18n.js';
import { api, tenantGets, headings, notice, actionButton, submitting } from '../app.js';
import { ssoSection } from './sso.js';

const ROLES = ['owner', 'admin', 'member'];

export async function membersPage(section, ctx) {
  const [members, invitations] = await tenantGets(ctx, 'members', 'invitations');
  const status = h('div', { 'aria-live': 'polite' });
  const canChange = ctx.may('members.role');
  const rows = members.data.map((m) => {
    const label = m.display_name ? `${m.display_name} <${m.email}>` : m.email;
    const role = canChange
      ? h('select', {
        'aria-label': `${t('changeRole')}: ${m.email}`,
        on: {
          change: async (e) => {
            try {
              await api('PATCH', `/admin/v1/tenants/${ctx.id}/members/${m.id}`, { role: e.target.value });
              status.replaceChildren(notice('ok', t('done')));
            } catch (err) {
              e.target.value = m.role;
              status.replaceChildren(notice('error', err.message));
            }
          },
        },
      }, ROLES.map((r) => h('option', { value: r, selected: r === m.role }, roleName(r))))
      : roleName(m.role);
    const remove = ctx.may('members.remove')
      ? actionButton(t('remove'), () => api('DELETE', `/admin/v1/tenants/${ctx.id}/members/${m.id}`), status,
        { danger: true, label: m.email, confirmText: t('confirmRemove') })
      : null;
    return h('tr', {}, h('td', {}, label), h('td', {}, role), h('td', {}, when(m.member_since)), h('td', {}, remove));
  });
  section.append(h('table', {},
    h('caption', {}, t('members')),
    headings(['email', 'role', 'created'], true),
    h('tbody', {}, rows)), status);

  if (ctx.may('members.invite')) section.append(inviteForm(ctx));
  const sso = ssoSection(ctx);
  section.append(h('h2', {}, t('invitations')));
  if (invitations.data.length === 0) { section.append(h('p', {}, t('none')), await sso); return; }
  section.append(h('table', {},
    headings(['email', 'role', 'status', 'expires'], true),
    h('tbody', {}, invitations.data.map((i) => {
      const state = i.accepted_at ? 'accepted' : i.revoked_at ? 'revoked' : 'pending';
      const revoke = state === 'pending' && ctx.may('members.invite')
        ? actionButton(t('revoke'), () => api('DELETE', `/admin/v1/tenants/${ctx.id}/invitations/${i.id}`), status, { label: i.email })
        : null;
      return h('tr', {}, h('td', {}, i.email), h('td', {}, roleName(i.role)), h('td', {}, t(state)),
        h('td', {}, when(i.expires_at)), h('td', {}, revoke));
    }))), await sso);
}

function inviteForm(ctx) {
  const email = h('input', { type: 'email', required: true });
  const roles = ctx.may('members.owners') ? ROLES : ROLES.filter((r) => r !== 'owner');
  const role = h('select', {}, roles.map((r) => h('option', { value: r, selected: r === 'member' }, roleName(r))));
  const status = h('div', { 'aria-live': 'polite' });
  return h('form', {
    class: 'card',
    on: submitting(async () => {
      const made = await api('POST', `/admin/v1/tenants/${ctx.id}/invitations`, { email: email.value, role: role.value });
      status.replaceChildren(h('p', {}, t('inviteLink')), h('code', { class: 'secret', 'data-testid': 'invite-link' }, made.link));
      email.value = '';
    }, status),
  }, h('h2', {}, t('inviteSomeone')), field(t('email'), email), field(t('role'), role),
  h('button', { type: 'submit' }, t('invite')), status);
}
