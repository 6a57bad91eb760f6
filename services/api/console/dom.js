// The console's only way to make DOM: elements from a tag, properties and children, where every
// string child becomes a text node. No markup is ever parsed, so text from a transcript, a
// memory entry or a tool's output stays text (the tests hold the sources to that).

const ATTRIBUTES = new Set([
  'id', 'class', 'type', 'name', 'value', 'placeholder', 'for', 'role', 'title', 'lang', 'required',
  'autocomplete', 'minlength', 'maxlength', 'disabled', 'checked', 'selected', 'tabindex', 'scope',
  'aria-label', 'aria-live', 'aria-current', 'aria-describedby', 'aria-invalid', 'aria-busy', 'colspan',
  'data-testid', 'download', 'rows', 'open', 'datetime', 'min', 'max', 'step', 'list',
]);

// Only the console's own pages and the API's own files are linked.
export function safeHref(href) {
  return typeof href === 'string' && /^\/(console|admin\/v1)([/?#]|$)/.test(href) ? href : '#';
}

export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'on') {
      for (const [event, handler] of Object.entries(value)) el.addEventListener(event, handler);
    } else if (key === 'href') {
      el.setAttribute('href', safeHref(value));
    } else if (ATTRIBUTES.has(key) || key.startsWith('aria-') || key.startsWith('data-')) {
      el.setAttribute(key, value === true ? '' : String(value));
    } else {
      throw new Error(`attribute not allowed: ${key}`);
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// A labelled form field: the label names the control, for screen readers and for tests.
export function field(label, control, hint) {
  const id = control.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  control.id = id;
  const hintEl = hint ? h('small', { id: `${id}-hint`, class: 'hint' }, hint) : null;
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, hintEl);
}

// A time, in the console's language.
export function when(iso) {
  if (!iso) return '—';
  const lang = document.documentElement.lang || undefined;
  return h('time', { datetime: iso, title: iso }, new Date(iso).toLocaleString(lang));
}
