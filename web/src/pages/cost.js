// The Cost page: a placeholder until it is built (see docs/web-ui.md, "Adding a page").
import { h } from '../dom.js';

export function render(root, params) {
  root.append(h('h1', {}, 'Cost'),
    h('p', { class: 'muted' }, 'This page is not built yet; the same data is in the API and the CLI.'));
  return () => {};
}
