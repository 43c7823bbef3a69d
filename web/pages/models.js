// Models: every model you may see (state, instances, requests served) and,
// for one, start and stop, a request sent and its answer, and its request
// rate and instances over the last hour from the host's history.
import { call } from '../api.js';
import { el, table, poll, live } from '../util.js';
import { onError, say } from '../app.js';

const HOUR_MS = 3600 * 1000;
const MODELS = '/dlim/v1/model';

export function modelsPage(main) {
  const body = el('div', { id: 'models' });
  main.replaceChildren(el('h1', {}, 'Models'), body);
  return live('models', () => call('GET', MODELS), async models => {
    const rows = models.map(m => el('tr', { 'data-model': m.name },
      el('td', {}, el('a', { href: `#/models/${encodeURIComponent(m.name)}` }, m.name)),
      el('td', {}, m.state), el('td', {}, m.owner),
      el('td', { class: 'num' }, `${m.kernels ? m.kernels.running : 0} of ${m.kernels ? m.kernels.target : 0}`),
      el('td', { class: 'num hide-narrow' }, m.requests ? m.requests.served : 0)));
    body.replaceChildren(models.length
      ? table('Models', ['Model', 'State', 'Owner', 'Instances', { label: 'Served', narrow: 1 }], rows)
      : el('p', {}, 'No model deployed: loom model deploy DIR.'));
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
  const answer = el('pre', { class: 'log', id: 'infer-answer', tabindex: '0', 'aria-label': 'the answer' });
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
  return [el('div', { class: 'actions' }, button('model-start', 'Start', 'start'), button('model-stop', 'Stop', 'stop')),
          el('h2', {}, 'Send a request'), form, answer];
}

export function modelPage(main, name) {
  const canvas = el('canvas', { id: 'model-chart', role: 'img',
                                'aria-label': 'requests per second and instances over the last hour' });
  const summary = el('p', { id: 'model-history' });
  const state = el('p', { id: 'model-state' });
  main.replaceChildren(el('h1', {}, `Model ${name}`), state, ...controls(name),
                       el('h2', {}, 'The last hour'), el('div', { class: 'chart' }, canvas), summary);
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
  return poll(async () => {
    const m = await call('GET', `${MODELS}/${encodeURIComponent(name)}`);
    state.textContent = `${m.state}: ${m.kernels.running} of ${m.kernels.target} instance(s), ` +
      `${m.requests.served} request(s) served` + (m.pendingReason ? ` (${m.pendingReason})` : '');
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
}
