// Submit (#/submit): paste a job spec (YAML or JSON, docs/job-spec.md), send it to
// POST /api/v1/jobs and go to the new job; a refused spec shows the server's located error
// (file:line: field: message) next to the text, with the line it names selected. Below, admins
// create team tokens (POST /api/v1/tokens): the secret is shown once, with a copy button.
import { api, ApiError, showError } from '../api.js';
import { h, replace } from '../dom.js';
import './job.css';

const EXAMPLE = `apiVersion: trainyard.dev/v1
kind: Job
metadata:
  name: hello
spec:
  template:
    command: [sh, -c, "echo hello from $HOSTNAME; nvidia-smi -L || true"]
    resources:
      limits:
        nvidia.com/gpu: 1
`;

// "job.yaml:6: spec.workers must be ..." -> 6 (null when the message names no line).
export function errorLine(message, file) {
  const m = message.match(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:(\\d+):`));
  return m ? Number(m[1]) : null;
}

function selectLine(textarea, line) {
  const lines = textarea.value.split('\n');
  const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
  textarea.focus();
  textarea.setSelectionRange(start, start + (lines[line - 1] || '').length);
  // Scroll the line into view: rows are about one line-height each.
  const lineHeight = parseFloat(getComputedStyle(textarea).lineHeight) || 18;
  textarea.scrollTop = Math.max(0, (line - 3) * lineHeight);
}

function submitForm() {
  const file = h('input', { type: 'text', id: 'spec-file', name: 'file', value: 'job.yaml', size: 20,
    'aria-describedby': 'spec-file-help' });
  const text = h('textarea', { id: 'spec-text', name: 'spec', spellcheck: 'false', autocomplete: 'off',
    'aria-describedby': 'spec-help spec-error' });
  text.value = EXAMPLE;
  const error = h('div', { id: 'spec-error', class: 'spec-error', role: 'alert', hidden: true });
  const button = h('button', { type: 'submit', class: 'primary', id: 'spec-submit' }, 'Submit job');
  const form = h('form', { class: 'submit-form', novalidate: true },
    h('label', { for: 'spec-text' }, 'Paste the spec (YAML or JSON)'),
    h('p', { id: 'spec-help', class: 'muted' }, 'One job per submission, as ', h('code', {}, 'trainyard submit -f'),
      ' takes it (docs/job-spec.md). A team token submits for its own team.'),
    text, error,
    h('div', { class: 'form-row' },
      h('div', {}, h('label', { for: 'spec-file' }, 'File name in error messages'), file),
      h('div', {}, button)),
    h('p', { id: 'spec-file-help', class: 'muted' }, 'Errors name this file and the line: job.yaml:6: ...'));
  text.addEventListener('input', () => {
    text.removeAttribute('aria-invalid');
  });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    button.disabled = true;
    error.hidden = true;
    const name = file.value.trim() || 'request';
    try {
      const job = await api(`/api/v1/jobs?file=${encodeURIComponent(name)}`, { method: 'POST', body: text.value });
      document.getElementById('live').textContent = `Submitted job ${job.id}`;
      location.hash = `#/jobs/${job.id}`;
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 400) {
        showError(e);
      } else {
        const line = errorLine(e.message, name);
        const source = line ? text.value.split('\n')[line - 1] : null;
        replace(error, h('strong', {}, 'The server refused the spec'), ` (HTTP ${e.status} ${e.code}):`,
          h('pre', { 'data-field': 'specError' }, e.message),
          line ? h('p', {}, `Line ${line}: `, h('code', { 'data-field': 'specErrorLine' }, source ?? '')) : null);
        error.hidden = false;
        text.setAttribute('aria-invalid', 'true');
        if (line) selectLine(text, line);
      }
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

function tokenForm() {
  const team = h('input', { type: 'text', id: 'token-team', name: 'team', required: true, size: 16,
    autocomplete: 'off', spellcheck: 'false' });
  const name = h('input', { type: 'text', id: 'token-name', name: 'name', size: 16, autocomplete: 'off',
    'aria-describedby': 'token-name-help' });
  const out = h('div', { id: 'token-out', role: 'status' });
  const form = h('form', { class: 'submit-form', novalidate: true },
    h('p', { class: 'muted' }, 'Admins only. A team token sees and submits only its team\'s jobs (',
      h('code', {}, 'trainyard token create --team TEAM'), ' does the same).'),
    h('div', { class: 'form-row' },
      h('div', {}, h('label', { for: 'token-team' }, 'Team'), team),
      h('div', {}, h('label', { for: 'token-name' }, 'Name (optional)'), name),
      h('div', {}, h('button', { type: 'submit', id: 'token-create' }, 'Create token'))),
    h('p', { id: 'token-name-help', class: 'muted' }, 'The name appears in events, e.g. "cancelled by alice".'),
    out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    replace(out);
    const body = { team: team.value.trim() };
    if (name.value.trim()) body.name = name.value.trim();
    try {
      const t = await api('/api/v1/tokens', { method: 'POST', body: JSON.stringify(body) });
      const code = h('code', { id: 'token-secret', 'data-field': 'token' }, t.token);
      const copied = h('span', { class: 'muted', role: 'status' });
      replace(out,
        h('p', {}, h('strong', {}, `Token "${t.name}" for team ${t.team}`), ' (id ', String(t.id),
          '). Copy it now: it is not shown again.'),
        h('div', { class: 'token-out' }, code,
          h('button', { type: 'button', id: 'token-copy', onclick: async () => {
            try {
              await navigator.clipboard.writeText(t.token);
              copied.textContent = 'Copied.';
            } catch {
              const range = document.createRange();
              range.selectNodeContents(code);
              getSelection().removeAllRanges();
              getSelection().addRange(range);
              copied.textContent = 'Selected: press Ctrl+C to copy.';
            }
          } }, 'Copy'), copied));
      team.value = '';
      name.value = '';
    } catch (e) {
      replace(out, h('p', { class: 'spec-error', 'data-field': 'tokenError' }, `${e.status === 403 ? 'Not allowed' : 'Refused'}: ${e.message}`));
    }
  });
  return form;
}

export function render(root) {
  root.append(h('h1', {}, 'Submit a job'),
    h('section', { class: 'card wide', 'aria-labelledby': 'submit-spec' }, h('h2', { id: 'submit-spec' }, 'Job spec'),
      submitForm()),
    h('section', { class: 'card wide', 'aria-labelledby': 'submit-token' }, h('h2', { id: 'submit-token' }, 'Create a team token'),
      tokenForm()));
  return () => {};
}
