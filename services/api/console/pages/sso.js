// A team's own single sign-on: every member sees which provider and domains sign the team in;
// operators set them (the domains are theirs to give).

import { h, field } from '../dom.js';
import { t, roleName } from '../i18n.js';
import { api, actionButton, submitThenReload, ApiFailure } from '../app.js';

export async function ssoSection(ctx) {
  const out = h('section', { 'aria-label': t('teamSso') }, h('h2', {}, t('teamSso')));
  let sso = null;
  try {
    sso = await api('GET', `/admin/v1/tenants/${ctx.id}/sso`);
  } catch (err) {
    if (!(err instanceof ApiFailure && err.status === 404)) throw err;
  }
  out.append(sso
    ? h('dl', { class: 'facts', 'data-testid': 'team-sso' },
      h('dt', {}, t('issuer')), h('dd', {}, sso.issuer),
      h('dt', {}, t('clientId')), h('dd', {}, sso.client_id),
      h('dt', {}, t('emailDomains')), h('dd', {}, sso.email_domains.join(', ')),
      h('dt', {}, t('joinAs')), h('dd', {}, sso.join_as ? roleName(sso.join_as) : t('joinNobody')))
    : h('p', { class: 'hint' }, t('noTeamSso')));
  if (!ctx.may('tenants.sso')) return out;
  const status = h('div', { 'aria-live': 'polite' });
  const input = (value, type = 'text') => h('input', { type, value: value ?? '' });
  const issuer = input(sso?.issuer, 'url');
  const clientId = input(sso?.client_id);
  const secret = input('', 'password');
  const domains = input(sso?.email_domains.join(', '));
  const joinAs = h('select', {}, h('option', { value: '' }, t('joinNobody')),
    ['member', 'admin'].map((r) => h('option', { value: r, selected: sso?.join_as === r }, roleName(r))));
  const save = () => {
    const body = {
      issuer: issuer.value, client_id: clientId.value,
      email_domains: domains.value.split(',').map((d) => d.trim()).filter(Boolean),
      join_as: joinAs.value || null,
    };
    if (secret.value) body.client_secret = secret.value;
    return api('PUT', `/admin/v1/tenants/${ctx.id}/sso`, body);
  };
  out.append(h('form', {
    class: 'card', on: submitThenReload(save, status),
  }, field(t('issuer'), issuer), field(t('clientId'), clientId), field(t('clientSecret'), secret, t('clientSecretHint')),
  field(t('emailDomains'), domains, t('emailDomainsHint')), field(t('joinAs'), joinAs),
  h('button', { type: 'submit' }, t('save')),
  sso ? [' ', actionButton(t('remove'), () => api('DELETE', `/admin/v1/tenants/${ctx.id}/sso`), status, { danger: true, label: t('teamSso') })] : null,
  status));
  return out;
}
