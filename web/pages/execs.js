// Experiments: the list (state, owner, workers, progress) and one exec
// (its facts, workers and devices, each epoch's training loss and
// accuracy from the host's history plotted with Chart.js, and its log
// followed): both live (util.js live), the list by the host's execs events,
// one exec by its own (each change of it fetches its history and its log).
import { call, EXECS } from '../api.js';
import { el, when, table, facts, live } from '../util.js';
import { onError, say } from '../app.js';

const POLL_MS = 2000;

function progress(x) {
  const t = x.training;
  if (!t || typeof t !== 'object') return '—';
  const parts = [];
  if (t.epochs) parts.push(`epoch ${Math.min((t.epoch || 0) + 1, t.epochs)} of ${t.epochs}`);
  if (t.iteration !== undefined) parts.push(`iteration ${t.iteration}`);
  return parts.join(', ') || '—';
}

function workers(x) {
  return x.workersNow !== undefined ? `${x.workersNow} of ${x.numWorker}` : String(x.numWorker ?? '—');
}

export function execsPage(main) {
  const body = el('div', { id: 'execs' });
  main.replaceChildren(el('h1', {}, 'Experiments'), body);
  return live('execs', () => call('GET', EXECS), async list => {
    const execs = Array.isArray(list) ? list : (list.execs || []);
    execs.sort((a, b) => (b.createTime || 0) - (a.createTime || 0));
    const rows = execs.map(x => el('tr', { 'data-exec': x.id },
      el('td', {}, el('a', { href: `#/execs/${encodeURIComponent(x.id)}` }, x.id)),
      el('td', { class: `state-${x.state}` }, x.state),
      el('td', {}, x.creator),
      el('td', { class: 'num' }, workers(x)),
      el('td', { class: 'hide-narrow' }, progress(x)),
      el('td', { class: 'hide-narrow' }, when(x.createTime))));
    body.replaceChildren(execs.length
      ? table('Experiments', ['Exec', 'State', 'Owner', 'Workers', { label: 'Progress', narrow: 1 },
                              { label: 'Submitted', narrow: 1 }], rows)
      : el('p', {}, 'No experiments yet: submit one with loom exec start (or dlicmd --exec-start).'));
  }, onError);
}

function lossChart(canvas) {
  if (!window.Chart) return null;
  return new window.Chart(canvas, {
    type: 'line',
    data: { datasets: [
      { label: 'training loss (epoch mean)', data: [], borderColor: '#1f6fb2', pointRadius: 3 },
      { label: 'training accuracy (epoch mean)', data: [], borderColor: '#0b6b2e', pointRadius: 3, yAxisID: 'acc' },
      { label: 'test loss', data: [], borderColor: '#c2410c', pointRadius: 3, borderDash: [4, 3] },
    ] },
    options: { animation: false, maintainAspectRatio: false, parsing: false,
               scales: { x: { type: 'linear', title: { display: true, text: 'epoch' }, ticks: { precision: 0 } },
                         y: { title: { display: true, text: 'loss' } },
                         acc: { position: 'right', min: 0, max: 1, title: { display: true, text: 'accuracy' },
                                grid: { drawOnChartArea: false } } } },
  });
}

// Each finished epoch's mean training loss and accuracy from the host's
// history (the whole run, however late the page opened).
async function epochPoints(id) {
  const h = await call('GET', `/loom/v1/history/execs/${encodeURIComponent(id)}/metrics?from=0`);
  const pick = name => h.points.filter(p => p.name === name).map(p => ({ x: p.epoch, y: p.value }));
  return { loss: pick('epoch_train_loss'), acc: pick('epoch_train_accuracy'), test: pick('epoch_test_loss') };
}

// Stop, and resize an elastic exec: state-changing calls, which carry the
// session's CSRF token (api.js).
function actions(id) {
  const path = `${EXECS}/${encodeURIComponent(id)}`;
  const stop = el('button', { type: 'button', id: 'exec-stop' }, 'Stop');
  stop.addEventListener('click', async () => {
    try { await call('POST', `${path}/stop`); say(`Stopping ${id}`); } catch (e) { onError(e); }
  });
  const workers = el('input', { id: 'resize-workers', type: 'number', min: '1', max: '4096', required: '' });
  const resize = el('form', { class: 'inline', id: 'exec-resize' },
    el('label', { for: 'resize-workers' }, 'Workers', workers), el('button', { type: 'submit' }, 'Resize'));
  resize.addEventListener('submit', async ev => {
    ev.preventDefault();
    try {
      await call('POST', `${path}/resize`, { workers: Number(workers.value) });
      say(`Asked ${id} for ${workers.value} worker(s)`);
    } catch (e) { onError(e); }
  });
  // the result folder as a zip (WMLA's GET .../result): a plain link, the
  // session's cookie authenticating it
  const download = el('a', { id: 'exec-download', href: `${path}/result`, download: `${id}.zip` },
    'Download the result (zip)');
  return el('div', { class: 'actions' }, stop, resize, download);
}

export function execPage(main, id) {
  const summary = el('div', { id: 'exec-summary' });
  const workersBox = el('div', { id: 'exec-workers' });
  const canvas = el('canvas', { id: 'loss-chart', role: 'img', 'aria-label': 'training loss and accuracy against epoch' });
  const points = el('p', { id: 'loss-points' }, '0 epoch(s) plotted');
  const running = el('p', { id: 'loss-running' });
  const log = el('pre', { class: 'log', id: 'exec-log', tabindex: '0', 'aria-label': 'log' });
  const follower = logFollower(id, log);
  main.replaceChildren(el('h1', {}, `Exec ${id}`), actions(id), summary,
    el('h2', {}, 'Workers and devices'), workersBox,
    el('h2', {}, 'Training loss'), el('div', { class: 'chart' }, canvas), points, running,
    el('h2', {}, 'Log'), follower.picker, log);
  const chart = lossChart(canvas);
  let shown = -1;
  return live('exec', () => call('GET', `${EXECS}/${encodeURIComponent(id)}`), async x => {
    const t = x.training && typeof x.training === 'object' ? x.training : {};
    summary.replaceChildren(facts([
      ['State', x.state], ['Owner', x.creator], ['Framework', x.framework], ['Workers', workers(x)],
      ['Progress', progress(x)],
      ['Throughput', t.samplesPerSecond !== undefined ? `${t.samplesPerSecond.toFixed(1)} samples/s` : '—'],
      ['Submitted', when(x.createTime)], ['Started', when(x.startTime)], ['Ended', when(x.endTime)],
      ['Message', x.message || '—']]));
    const devices = t.workerDevices || [];
    const ws = x.workers || [];
    workersBox.replaceChildren(ws.length || devices.length
      ? table('Workers', ['Rank', 'State', 'Device'], (ws.length ? ws : devices.map((d, i) => ({ rank: i }))).map((w, i) =>
          el('tr', {}, el('td', { class: 'num' }, w.rank), el('td', {}, w.state || 'RUNNING'),
             el('td', {}, devices[i] !== undefined ? `${t.deviceKind || ''} ${devices[i]}` : '—'))))
      : el('p', {}, 'No worker runs now.'));
    const { loss, acc, test } = await epochPoints(id);
    if (loss.length !== shown) {
      shown = loss.length;
      if (chart) {
        chart.data.datasets[0].data = loss;
        chart.data.datasets[1].data = acc;
        chart.data.datasets[2].data = test;
        chart.update();
      }
      const last = loss[loss.length - 1];
      points.textContent = `${loss.length} epoch(s) plotted` + (last ? `, last loss ${last.y.toFixed(4)}` : '');
    }
    running.textContent = typeof t.trainLoss === 'number'
      ? `this epoch so far: loss ${t.trainLoss.toFixed(4)} at iteration ${t.iteration}` : '';
    follower.workers(x.framework === 'edt', Math.max(x.numWorker || 1, ws.length));
    await follower.more();
  }, onError, { exec: id });
}

// Follows one log of the exec (the training driver's, or a worker's stdout
// or stderr) from where it was read last, a page at a time (the host sends
// at most 1 MiB from an offset); the last 64 KiB stay on screen.
const LOG_KEEP = 65536;

function logFollower(id, pre) {
  const worker = el('select', { id: 'log-worker' });
  const stream = el('select', { id: 'log-stream' },
    el('option', { value: 'stdout' }, 'stdout'), el('option', { value: 'stderr' }, 'stderr'));
  const picker = el('div', { class: 'actions' },
    el('label', { for: 'log-worker' }, 'Log of', worker), el('label', { for: 'log-stream' }, 'Stream', stream));
  let offset = 0, decoder = new TextDecoder(), shown = '';
  const restart = () => { offset = 0; decoder = new TextDecoder(); shown = ''; pre.textContent = ''; };
  worker.addEventListener('change', restart);
  stream.addEventListener('change', restart);
  return {
    picker,
    workers(elastic, n) {
      const want = (elastic ? ['-1'] : []).concat([...Array(n).keys()].map(String));
      if (worker.options.length === want.length) return;
      const keep = worker.value;
      worker.replaceChildren(...want.map(w => el('option', { value: w }, w === '-1' ? 'the training driver' : `worker ${w}`)));
      if (want.includes(keep)) worker.value = keep;
    },
    async more() {
      const q = `worker=${worker.value || 0}&stream=${stream.value}&offset=${offset}`;
      const res = await fetch(`${EXECS}/${encodeURIComponent(id)}/log?${q}`, { credentials: 'same-origin' });
      if (!res.ok) return;
      const bytes = await res.arrayBuffer();
      offset += bytes.byteLength;
      shown += decoder.decode(bytes, { stream: true });
      if (shown.length > LOG_KEEP) shown = shown.slice(-LOG_KEEP);
      if (bytes.byteLength) pre.textContent = shown;
    },
  };
}
