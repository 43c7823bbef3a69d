// Tuning: every task (state, owner, progress; polled), a task submitted from WMLA's
// task JSON and the model directory's archive, and one task: its
// experiments (parameters, metric, state, link to the exec), the objective
// against experiment number with the running best (Chart.js), and the
// parameters against the metric as parallel coordinates (a small SVG of
// the console's own: Chart.js has none), live by the task's events.
import { call, callForm } from '../api.js';
import { el, when, table, facts, poll, live, field } from '../util.js';
import { onError, say } from '../app.js';

const HPO = '/platform/rest/deeplearning/v1/hypersearch';
const SVG = 'http://www.w3.org/2000/svg';

// WMLA's task JSON (hpo-task-random.json's shape), for a start: the
// model directory's name in modelSpec.args is the archive's.
const TEMPLATE = {
  hpoName: 'my-task',
  modelSpec: { args: '--exec-start edt --model-dir MODEL_DIR --numWorker 1' },
  algoDef: { algorithm: 'Random', maxJobNum: 4, maxParalleJobNum: 1, objectiveMetric: 'loss', objective: 'minimize' },
  hyperParams: [{ name: 'learning_rate', type: 'Range', dataType: 'DOUBLE', minDbVal: -4, maxDbVal: -1, power: '10' }],
};

// Sent as loom hpo submit sends it (multipart "data", the task JSON as it
// is typed, and "file", the model directory as a tar or a zip): the host
// checks both, and its refusal is shown as the CLI shows it.
function submitForm() {
  const task = el('textarea', { rows: '14', spellcheck: 'false' }, JSON.stringify(TEMPLATE, null, 2));
  const json = el('input', { type: 'file', accept: '.json,application/json' });
  const file = el('input', { type: 'file', accept: '.tar,.tar.gz,.tgz,.zip' });
  json.addEventListener('change', async () => { if (json.files[0]) task.value = await json.files[0].text(); });
  const form = el('form', { class: 'submit', id: 'task-form' },
    field('task-json-file', 'Task JSON from a file (fills the task below)', json),
    field('task-json', 'Task (WMLA\'s task JSON)', task),
    field('task-file', 'Model directory (a tar or a zip)', file),
    el('button', { type: 'submit', id: 'task-go' }, 'Submit the task'));
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    say('');
    if (!file.files[0]) { say('Refused: pick the model directory, as a tar or a zip'); return; }
    const body = new FormData();
    body.append('data', task.value);
    body.append('file', file.files[0], file.files[0].name);
    try {
      const name = await callForm('POST', HPO, body);
      location.hash = `#/tuning/${encodeURIComponent(name)}`;
    } catch (e) {
      if (e.status === 401) onError(e); else say(`Refused: ${e.message}`);
    }
  });
  return form;
}

export function tuningListPage(main) {
  const body = el('div', { id: 'tasks' });
  main.replaceChildren(el('h1', {}, 'Tuning'), body, el('h2', {}, 'Submit a task'), submitForm());
  return poll(async () => {
    const tasks = await call('GET', HPO);
    const rows = tasks.map(t => el('tr', { 'data-task': t.hpoName },
      el('td', {}, el('a', { href: `#/tuning/${encodeURIComponent(t.hpoName)}` }, t.hpoName)),
      el('td', {}, t.state), el('td', {}, t.creator), el('td', { class: 'hide-narrow' }, when(t.createTime))));
    body.replaceChildren(tasks.length
      ? table('Tuning tasks', ['Task', 'State', 'Owner', { label: 'Submitted', narrow: 1 }], rows)
      : el('p', {}, 'No tuning task yet: submit one below, or loom hpo submit TASK.json --model-dir DIR.'));
  }, onError);
}

function params(x) {
  return (x.hyperParams || []).map(h => `${h.name}=${h.fixedVal}`).join(', ');
}

function objectiveChart(canvas) {
  if (!window.Chart) return null;
  return new window.Chart(canvas, {
    type: 'line',
    data: { datasets: [
      { label: 'objective', data: [], showLine: false, pointRadius: 4, borderColor: '#1f6fb2', backgroundColor: '#1f6fb2' },
      { label: 'best so far', data: [], stepped: true, pointRadius: 0, borderColor: '#c2410c' },
    ] },
    options: { animation: false, maintainAspectRatio: false, parsing: false,
               scales: { x: { type: 'linear', ticks: { precision: 0 }, title: { display: true, text: 'experiment' } } } },
  });
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

// One vertical axis per numeric parameter and one for the metric; one line
// per finished experiment, darker the better.
function parallel(box, exps, metricName, maximize) {
  const done = exps.filter(x => typeof x.metricVal === 'number');
  const names = [...new Set(done.flatMap(x => (x.hyperParams || []).map(h => h.name)))]
    .filter(n => done.every(x => !isNaN(Number((x.hyperParams.find(h => h.name === n) || {}).fixedVal))));
  const axes = [...names, metricName];
  const value = (x, a) => a === metricName ? x.metricVal : Number(x.hyperParams.find(h => h.name === a).fixedVal);
  const W = 600, H = 240, pad = 30;
  const s = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img', id: 'parallel',
                         'aria-label': `parameters against ${metricName}, one line per experiment` });
  if (!done.length || axes.length < 2) { box.replaceChildren(el('p', {}, 'No finished experiment to draw yet.')); return; }
  const x = i => pad + i * (W - 2 * pad) / (axes.length - 1);
  const ranges = axes.map(a => { const v = done.map(e => value(e, a)); return [Math.min(...v), Math.max(...v)]; });
  const y = (i, v) => { const [lo, hi] = ranges[i]; return H - pad - (hi > lo ? (v - lo) / (hi - lo) : 0.5) * (H - 2 * pad); };
  const [mlo, mhi] = ranges[axes.length - 1];
  axes.forEach((a, i) => {
    s.append(svg('line', { x1: x(i), x2: x(i), y1: pad, y2: H - pad, stroke: '#555' }));
    const t = svg('text', { x: x(i), y: pad - 10, 'text-anchor': 'middle', 'font-size': '12' });
    t.textContent = a;
    s.append(t);
  });
  for (const e of done) {
    const good = mhi > mlo ? (e.metricVal - mlo) / (mhi - mlo) : 1;
    const q = maximize ? good : 1 - good;
    const pts = axes.map((a, i) => `${x(i)},${y(i, value(e, a))}`).join(' ');
    const line = svg('polyline', { points: pts, fill: 'none', stroke: '#1f6fb2', 'stroke-width': '2',
                                   'stroke-opacity': String(0.25 + 0.75 * q) });
    const title = svg('title', {});
    title.textContent = `experiment ${e.id}: ${params(e)}, ${metricName} ${e.metricVal}`;
    line.append(title);
    s.append(line);
  }
  box.replaceChildren(s);
}

export function tuningPage(main, name) {
  const summary = el('div', { id: 'task-summary' });
  const exps = el('div', { id: 'task-experiments' });
  const canvas = el('canvas', { id: 'objective-chart', role: 'img', 'aria-label': 'objective against experiment number, with the best so far' });
  const pc = el('div', { id: 'task-parallel' });
  main.replaceChildren(el('h1', {}, `Tuning task ${name}`), summary, el('h2', {}, 'Experiments'), exps,
                       el('h2', {}, 'Objective'), el('div', { class: 'chart' }, canvas),
                       el('h2', {}, 'Parameters against the objective'), pc);
  const chart = objectiveChart(canvas);
  return live('task', () => call('GET', `${HPO}/${encodeURIComponent(name)}`), async t => {
    const maximize = t.objective === 'maximize';
    summary.replaceChildren(facts([['State', t.state], ['Owner', t.creator], ['Algorithm', t.algorithm],
      ['Objective', `${t.objective} ${t.objectiveMetric}`], ['Progress', t.progress || '—'],
      ['Best', t.best ? `${t.best.metricVal} (experiment ${t.best.id}: ${params(t.best)})` : '—']]));
    const list = (t.experiments || []).slice().sort((a, b) => a.id - b.id);
    exps.replaceChildren(table('Experiments', ['#', 'State', 'Parameters', t.objectiveMetric || 'metric', 'Exec'],
      list.map(x => el('tr', { 'data-experiment': x.id },
        el('td', { class: 'num' }, x.id), el('td', {}, x.state), el('td', {}, params(x)),
        el('td', { class: 'num' }, typeof x.metricVal === 'number' ? x.metricVal : '—'),
        el('td', {}, x.appId ? el('a', { href: `#/execs/${encodeURIComponent(x.appId)}` }, x.appId) : '—')))));
    const pts = list.filter(x => typeof x.metricVal === 'number').map(x => ({ x: x.id, y: x.metricVal }));
    let best = null;
    const bestPts = pts.map(p => { best = best === null || (maximize ? p.y > best : p.y < best) ? p.y : best; return { x: p.x, y: best }; });
    if (chart) { chart.data.datasets[0].data = pts; chart.data.datasets[1].data = bestPts; chart.update(); }
    parallel(pc, list, t.objectiveMetric || 'metric', maximize);
  }, onError, { task: name });
}
