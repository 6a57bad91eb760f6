// Toolsets as choices, shared by the agent pages (what an agent has) and the pages that narrow
// them for an audience (a bot's kinds of chat, an API key): checkboxes, each named and
// described, never free text.

import { h } from './dom.js';
import { t } from './i18n.js';
import { api } from './app.js';

// Every toolset with what it does, whether the installation has the service it needs and
// whether new agents get it.
export async function toolsetChoices(ctx) {
  return (await api('GET', `/admin/v1/tenants/${ctx.id}/toolsets`)).data;
}

// The toolsets as checkboxes. One whose service the installation lacks says which and stays
// selectable: a team's own key (a search or image service's pool) can serve it, and until then
// its tool tells the model what is missing. `prefix` keeps ids apart when a page has several.
export function toolsetPicker(choices, checked, disabled, prefix = 'toolset', legend = t('toolsets')) {
  const boxes = choices.map((c) => h('input', {
    type: 'checkbox', id: `${prefix}-${c.name}`, value: c.name, checked: checked.includes(c.name), disabled,
    'aria-describedby': `${prefix}-${c.name}-hint`,
  }));
  const element = h('fieldset', { class: 'toolsets', 'data-testid': prefix === 'toolset' ? 'toolsets' : prefix },
    h('legend', {}, legend),
    choices.map((c, i) => h('div', { class: 'toolset' }, boxes[i], h('label', { for: boxes[i].id }, c.name),
      h('small', { id: `${prefix}-${c.name}-hint`, class: 'hint' }, c.description,
        c.configured ? null : h('span', { class: 'badge' }, t('needsOperator').replace('{service}', t(`service_${c.needs}`)))))));
  return { element, value: () => boxes.filter((b) => b.checked).map((b) => b.value) };
}

// A limit an audience may set: unchecked, every toolset of the agent; checked, only those
// picked. `current` is the limit in force (`null`: none). Its value is `null` or the list.
export function limitPicker(choices, current, disabled, prefix, legend) {
  const on = h('input', { type: 'checkbox', id: `${prefix}-limited`, checked: current !== null && current !== undefined, disabled });
  const picker = toolsetPicker(choices, current || [], disabled, prefix, legend);
  const show = () => { picker.element.hidden = !on.checked; };
  on.addEventListener('change', show);
  show();
  const element = h('div', { class: 'limit' },
    h('div', { class: 'field inline' }, on, h('label', { for: on.id }, `${legend}: ${t('onlyThese')}`)), picker.element);
  return { element, value: () => (on.checked ? picker.value() : null) };
}
