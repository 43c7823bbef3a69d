// Models: every model you may see (state, instances, requests served) and,
// for one, its request rate and instances over the last hour from the
// host's history.
import { call } from '../api.js';
import { el, table, poll } from '../util.js';
import { onError } from '../app.js';

const HOUR_MS = 3600 * 1000;
const MODELS = '/dlim/v1/model';

export function modelsPage(main) {
  const body = el('div', { id: 'models' });
  main.replaceChildren(el('h1', {}, 'Models'), body);
  return poll(async () => {
    const models = await call('GET', MODELS);
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

export function modelPage(main, name) {
  const canvas = el('canvas', { id: 'model-chart', role: 'img',
                                'aria-label': 'requests per second and instances over the last hour' });
  const summary = el('p', { id: 'model-history' });
  main.replaceChildren(el('h1', {}, `Model ${name}`), el('div', { class: 'chart' }, canvas), summary);
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
