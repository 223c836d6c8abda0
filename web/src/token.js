// The API token, kept in sessionStorage: it lives as long as the tab and is never written to
// disk by the page. On a loopback server no token is needed; elsewhere the first 401 opens
// this prompt. Saving or forgetting a token fires `trainyard:token` so the page reloads its data.
import { h } from './dom.js';

const KEY = 'trainyard.token';

export function getToken() {
  return sessionStorage.getItem(KEY) || '';
}

function setToken(token) {
  if (token) sessionStorage.setItem(KEY, token);
  else sessionStorage.removeItem(KEY);
  window.dispatchEvent(new Event('trainyard:token'));
}

let dialog = null;

function build() {
  const input = h('input', {
    id: 'token-input', type: 'password', name: 'token', autocomplete: 'off', spellcheck: 'false',
    placeholder: 'ty_…', 'aria-describedby': 'token-help',
  });
  const message = h('p', { id: 'token-message', class: 'token-message', role: 'alert' });
  const form = h('form', { method: 'dialog' },
    h('h2', { id: 'token-title' }, 'API token'),
    message,
    h('label', { for: 'token-input' }, 'Token'),
    input,
    h('p', { id: 'token-help', class: 'muted' },
      'An admin token (the server writes one to admin.token in its state directory) or a team ',
      'token (trainyard token create --team TEAM). It is kept in this tab only (sessionStorage).'),
    h('div', { class: 'buttons' },
      h('button', { type: 'submit', value: 'save', class: 'primary' }, 'Use token'),
      h('button', { type: 'submit', value: 'forget' }, 'Forget token'),
      h('button', { type: 'submit', value: 'cancel' }, 'Cancel')));
  dialog = h('dialog', { id: 'token-dialog', 'aria-labelledby': 'token-title' }, form);
  dialog.addEventListener('close', () => {
    if (dialog.returnValue === 'save' && input.value.trim()) setToken(input.value.trim());
    else if (dialog.returnValue === 'forget') setToken('');
    input.value = '';
  });
  document.body.append(dialog);
  return dialog;
}

// Opens the prompt (once, however many requests failed) with the server's reason.
export function promptForToken(reason = '') {
  const d = dialog || build();
  d.querySelector('#token-message').textContent = reason;
  if (!d.open) {
    d.returnValue = '';
    d.showModal();
    d.querySelector('#token-input').focus();
  }
}
