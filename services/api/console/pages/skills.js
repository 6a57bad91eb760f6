// An agent's skills: each with where it comes from and how much it is used, hidden from the
// agent or shown again, its SKILL.md shown as text; and a tenant-wide SKILL.md to upload.

import { h, field, when } from '../dom.js';
import { t } from '../i18n.js';
import { api, headings, notice, submitThenReload } from '../app.js';

export async function skillsPage(section, ctx, agentId) {
  const found = await api('GET', `/admin/v1/tenants/${ctx.id}/agents/${agentId}/skills`);
  const status = h('div', { 'aria-live': 'polite' });
  const shown = h('pre', { class: 'text', 'data-testid': 'skill-md' });
  const edit = ctx.may('skills.edit');
  section.append(h('p', {}, h('a', { href: `${ctx.base}/agents` }, `← ${t('back')}`)), h('h2', {}, t('skills')));
  section.append(h('table', {},
    headings(['name', 'scope', 'status', 'uses', 'lastUsed'], true),
    h('tbody', {}, found.skills.map((k) => h('tr', {},
      h('td', {}, h('button', {
        type: 'button', class: 'link',
        on: { click: async () => { const one = await api('GET', `/admin/v1/tenants/${ctx.id}/agents/${agentId}/skills/${encodeURIComponent(k.name)}`); shown.textContent = one.skill_md; } },
      }, k.name), h('br', {}), h('small', { class: 'hint' }, k.description)),
      h('td', {}, t(`scope_${k.scope}`)), h('td', {}, k.disabled ? t('hidden') : k.state),
      h('td', {}, String(k.use_count)), h('td', {}, when(k.last_used_at)),
      h('td', {}, edit ? h('button', {
        type: 'button',
        on: {
          click: async () => {
            try {
              await api('POST', `/admin/v1/tenants/${ctx.id}/agents/${agentId}/skills/${encodeURIComponent(k.name)}/${k.disabled ? 'enable' : 'disable'}`);
              location.reload();
            } catch (err) { status.replaceChildren(notice('error', err.message)); }
          },
        },
      }, k.disabled ? t('show') : t('hide')) : null))))), status, shown);
  if (!edit) return;
  const text = h('textarea', { rows: '12', 'aria-label': 'SKILL.md', placeholder: '---\nname: my-skill\ndescription: ...\n---\n' });
  const upStatus = h('div', { 'aria-live': 'polite' });
  section.append(h('form', {
    class: 'card',
    on: submitThenReload(async () => {
      const name = (text.value.match(/^name:\s*(\S+)/m) || [])[1];
      if (!name) throw new Error(t('skillNeedsName'));
      await api('PUT', `/admin/v1/tenants/${ctx.id}/skills/${encodeURIComponent(name)}`, { skill_md: text.value });
    }, upStatus),
  }, h('h2', {}, t('uploadSkill')), h('p', { class: 'hint' }, t('uploadSkillHint')), field('SKILL.md', text),
  h('button', { type: 'submit' }, t('save')), upStatus));
}
