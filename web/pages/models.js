// Models: every model you may see (state, instances, requests served) and a
// model directory deployed from a tar or a zip (with a profile or not);
// for one, start and stop, its profile edited, undeploy, a request sent and
// its answer, and its request rate and instances over the last hour from
// the host's history. The host's refusals are shown as it words them. The
// list and one model's state are live by the host's events.
import { call, callForm } from '../api.js';
import { el, table, poll, live, field } from '../util.js';
import { onError, say } from '../app.js';

const HOUR_MS = 3600 * 1000;
const MODELS = '/dlim/v1/model';

// Deploy: the same multipart upload as loom model deploy -p DIR ("file",
// and "profile" when one is picked); a model opens its page once deployed.
function deployForm() {
  const file = el('input', { type: 'file', accept: '.tar,.tar.gz,.tgz,.zip' });
  const profile = el('input', { type: 'file', accept: '.json,application/json' });
  const form = el('form', { class: 'submit', id: 'deploy-form' },
    field('deploy-file', 'Model directory (a tar or a zip)', file),
    field('deploy-profile', 'Profile (profile.json, optional)', profile),
    el('button', { type: 'submit', id: 'deploy-go' }, 'Deploy'));
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    say('');
    if (!file.files[0]) { say('Refused: pick the model directory, as a tar or a zip'); return; }
    const body = new FormData();
    body.append('file', file.files[0], file.files[0].name);
    if (profile.files[0]) body.append('profile', profile.files[0], profile.files[0].name);
    try {
      const m = await callForm('POST', MODELS, body);
      location.hash = `#/models/${encodeURIComponent(m.name)}`;
    } catch (e) {
      if (e.status === 401) onError(e); else say(`Refused: ${e.message}`);
    }
  });
  return form;
}

export function modelsPage(main) {
  const body = el('div', { id: 'models' });
  main.replaceChildren(el('h1', {}, 'Models'), body, el('h2', {}, 'Deploy a model'), deployForm());
  return live('models', () => call('GET', MODELS), async models => {
    const rows = models.map(m => el('tr', { 'data-model': m.name },
      el('td', {}, el('a', { href: `#/models/${encodeURIComponent(m.name)}` }, m.name)),
      el('td', {}, m.state), el('td', {}, m.owner),
      el('td', { class: 'num' }, `${m.kernels ? m.kernels.running : 0} of ${m.kernels ? m.kernels.target : 0}`),
      el('td', { class: 'num hide-narrow' }, m.requests ? m.requests.served : 0)));
    body.replaceChildren(models.length
      ? table('Models', ['Model', 'State', 'Owner', 'Instances', { label: 'Served', narrow: 1 }], rows)
      : el('p', {}, 'No model deployed: deploy one below, or loom model deploy -p DIR.'));
  }, onError);
}

// Start, stop, and a request to the model with its answer: state-changing
// calls, which carry the session's CSRF token (api.js).
function controls(name) {
  const path = `${MODELS}/${encodeURIComponent(name)}`;
  const button = (id, text, op) => {
    const b = el('button', { type: 'button', id }, text);
    b.addEventListener('click', async () => {
      try { const m = await call('POST', `${path}/operation/${op}`); say(`Model ${name}: ${m.state || op}`); }
      catch (e) { onError(e); }
    });
    return b;
  };
  const input = el('textarea', { id: 'infer-body', rows: '3' }, '{"a": 1}');
  const answer = el('pre', { class: 'log', id: 'infer-answer', tabindex: '0', role: 'region',
                                  'aria-label': 'the answer' });
  const form = el('form', { id: 'infer-form', class: 'submit' },
    el('label', { for: 'infer-body' }, 'Request (JSON)', input), el('button', { type: 'submit', id: 'infer-send' }, 'Send'));
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    let body;
    try { body = JSON.parse(input.value); } catch (e) { say(`Request: not JSON (${e.message})`); return; }
    try {
      answer.textContent = JSON.stringify(await call('POST', `/dlim/v1/inference/${encodeURIComponent(name)}`, body), null, 2);
    } catch (e) { answer.textContent = ''; onError(e); }
  });
  return [el('div', { class: 'actions' }, button('model-start', 'Start', 'start'), button('model-stop', 'Stop', 'stop'),
                 ...undeploy(name)),
          el('h2', {}, 'Send a request'), form, answer];
}

// The profile's fields the form edits (WMLA's profile.json: section, key,
// label with its unit); sdk/doc/serving.md has their ranges, which the host
// checks: the form does not, so its refusal is the one shown.
const PROFILE = [
  [null, 'replica', 'Replicas (groups of instances)'],
  ['policy', 'kernel_min', 'Fewest instances (0: scale to zero)'],
  ['policy', 'kernel_max', 'Most instances (-1: as the plan gives)'],
  ['policy', 'task_batch_size', 'Batch size (requests)'],
  ['policy', 'task_execution_timeout', 'Request timeout (s; -1: none)'],
  ['policy', 'kernel_delay_release_time', 'Idle time before an instance goes (s)'],
  ['policy', 'schedule_interval', 'Autoscaler period (s)'],
  ['kernel', 'connection_timeout', 'Kernel load timeout (s)'],
];

// Sent to the route loom model updateprofile uses (PUT .../appprofile),
// which merges what it is given: the fields left empty are not sent.
function profileForm(name) {
  const path = `${MODELS}/${encodeURIComponent(name)}/appprofile`;
  const inputs = PROFILE.map(([sec, key]) => [sec, key, el('input', { type: 'number', step: 'any' })]);
  const gpu = el('select', {}, ['', 'no', 'shared', 'exclusive'].map(v => el('option', { value: v }, v || '(unchanged)')));
  const form = el('form', { class: 'submit', id: 'profile-form', novalidate: '' },
    inputs.map(([, key, input], i) => field(`profile-${key}`, PROFILE[i][2], input)),
    field('profile-gpu', 'GPU (no, shared, exclusive)', gpu),
    el('button', { type: 'submit', id: 'profile-save' }, 'Save the profile'));
  const fill = p => {
    for (const [sec, key, input] of inputs) {
      const v = sec ? (p && p[sec] || {})[key] : p && p[key];
      input.value = typeof v === 'number' ? String(v) : '';
    }
    gpu.value = (p && p.kernel && p.kernel.gpu) || '';
  };
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    say('');
    const body = {};
    for (const [sec, key, input] of inputs) {
      if (input.value === '') continue;
      const into = sec ? (body[sec] = body[sec] || {}) : body;
      into[key] = Number(input.value);
    }
    if (gpu.value) (body.kernel = body.kernel || {}).gpu = gpu.value;
    try { fill(await call('PUT', path, body)); say(`Profile of ${name} saved`); }
    catch (e) { if (e.status === 401) onError(e); else say(`Refused: ${e.message}`); }
  });
  return { form, fill };
}

// Undeploy, asked twice: the first button shows the question and its answer.
function undeploy(name) {
  const ask = el('button', { type: 'button', id: 'model-undeploy' }, 'Undeploy');
  const yes = el('button', { type: 'button', id: 'model-undeploy-confirm' }, `Yes, undeploy ${name}`);
  const no = el('button', { type: 'button', id: 'model-undeploy-cancel' }, 'Cancel');
  const question = el('div', { class: 'actions', id: 'undeploy-question', role: 'group',
                               'aria-label': 'confirm undeploy', hidden: '' },
    el('p', {}, `Undeploy ${name}? Its files are removed from the host.`), yes, no);
  ask.addEventListener('click', () => { question.hidden = false; no.focus(); });
  no.addEventListener('click', () => { question.hidden = true; ask.focus(); });
  yes.addEventListener('click', async () => {
    try {
      await call('DELETE', `${MODELS}/${encodeURIComponent(name)}`);
      location.hash = '#/models';
    } catch (e) { question.hidden = true; if (e.status === 401) onError(e); else say(`Refused: ${e.message}`); }
  });
  return [ask, question];
}

export function modelPage(main, name) {
  const canvas = el('canvas', { id: 'model-chart', role: 'img',
                                'aria-label': 'requests per second and instances over the last hour' });
  const summary = el('p', { id: 'model-history' });
  const state = el('p', { id: 'model-state' });
  const profile = profileForm(name);
  main.replaceChildren(el('h1', {}, `Model ${name}`), state, ...controls(name),
                       el('h2', {}, 'The last hour'), el('div', { class: 'chart' }, canvas), summary,
                       el('h2', {}, 'Profile (the model stopped)'), profile.form);
  let filled = false;
  const chart = window.Chart ? new window.Chart(canvas, {
    type: 'line',
    data: { datasets: [
      { label: 'requests/s', data: [], borderColor: '#1f6fb2', pointRadius: 0 },
      { label: 'instances', data: [], borderColor: '#c2410c', pointRadius: 0, stepped: true, yAxisID: 'n' },
    ] },
    options: { animation: false, maintainAspectRatio: false, parsing: false,
               scales: { x: { type: 'linear', ticks: { callback: v => new Date(v).toLocaleTimeString() } },
                         y: { min: 0, title: { display: true, text: 'requests/s' } },
                         n: { position: 'right', min: 0, ticks: { precision: 0 }, grid: { drawOnChartArea: false },
                              title: { display: true, text: 'instances' } } } },
  }) : null;
  const path = `${MODELS}/${encodeURIComponent(name)}`;
  const stopState = live('model', () => call('GET', path), async m => {
    state.textContent = `${m.state}: ${m.kernels.running} of ${m.kernels.target} instance(s), ` +
      `${m.requests.served} request(s) served` + (m.pendingReason ? ` (${m.pendingReason})` : '');
    if (!filled) { profile.fill(m.profile); filled = true; }
  }, onError, { model: name });
  // the history is written by the host's own sampler: polled, as on the
  // devices page, so that the rate falls to 0 when requests stop
  const stopHistory = poll(async () => {
    const now = Date.now();
    const h = await call('GET', `/loom/v1/history/models/${encodeURIComponent(name)}?from=${now - HOUR_MS}&to=${now}`);
    if (chart) {
      chart.data.datasets[0].data = h.points.map(p => ({ x: p.t, y: p.requestsPerSecond }));
      chart.data.datasets[1].data = h.points.map(p => ({ x: p.t, y: p.instances }));
      chart.update();
    }
    const last = h.points[h.points.length - 1];
    summary.textContent = last
      ? `${last.requestsPerSecond.toFixed(1)} requests/s on ${last.instances} instance(s) at ${new Date(last.t).toLocaleTimeString()}`
      : 'no rate recorded in the last hour';
  }, onError);
  return () => { stopState(); stopHistory(); };
}
