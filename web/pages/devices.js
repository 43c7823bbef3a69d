// Devices: every device and what holds it (an exec, a tuning experiment or a
// model's instance, and its user), live (util.js live); and the last hour from
// the host's history, polled every 2 s: how many devices each holder had over
// time, so an elastic resize (4 -> 2+2 -> 4) shows as steps.
import { call } from '../api.js';
import { el, table, poll, live } from '../util.js';
import { onError } from '../app.js';

const HOUR_MS = 3600 * 1000;
const COLOURS = ['#1f6fb2', '#c2410c', '#0b6b2e', '#7c3aed', '#b91c1c', '#0e7490', '#a16207'];

// The history's changes (slot, holder, from t) as each holder's device
// count at every change, and now.
function heldOverTime(changes, now) {
  const bySlot = new Map(), series = new Map(), times = [];
  for (const c of changes) {
    bySlot.set(c.slot, c.holder);
    times.push(c.t);
    const counts = new Map();
    for (const h of bySlot.values()) if (h) counts.set(h, (counts.get(h) || 0) + 1);
    for (const h of new Set([...series.keys(), ...counts.keys()])) {
      if (!series.has(h)) series.set(h, []);
      series.get(h).push({ x: c.t, y: counts.get(h) || 0 });
    }
  }
  for (const pts of series.values()) if (pts.length) pts.push({ x: now, y: pts[pts.length - 1].y });
  return series;
}

function timeline(canvas) {
  if (!window.Chart) return null;
  return new window.Chart(canvas, {
    type: 'line',
    data: { datasets: [] },
    options: { animation: false, maintainAspectRatio: false, parsing: false,
               scales: { x: { type: 'linear', title: { display: true, text: 'time' },
                              ticks: { callback: v => new Date(v).toLocaleTimeString() } },
                         y: { min: 0, ticks: { precision: 0 }, title: { display: true, text: 'devices held' } } } },
  });
}

export function devicesPage(main) {
  const body = el('div', { id: 'devices' });
  const canvas = el('canvas', { id: 'devices-chart', role: 'img',
                                'aria-label': 'devices held by each job over the last hour' });
  const summary = el('p', { id: 'devices-history' });
  main.replaceChildren(el('h1', {}, 'Devices'), body, el('h2', {}, 'The last hour'),
                       el('div', { class: 'chart' }, canvas), summary);
  const chart = timeline(canvas);
  const stopTable = live('slots', () => call('GET', '/loom/v1/slots'), async slots => {
    const rows = slots.map(s => el('tr', { 'data-slot': s.slot },
      el('td', {}, s.node || 'this host'), el('td', {}, `${s.kind} ${s.index}`),
      el('td', {}, s.held ? (s.holder ? `${s.holder} ` : '') : 'free',
         s.held && s.owner && s.owner !== "another user's"
           ? el('a', { href: `#/execs/${encodeURIComponent(s.owner)}` }, s.owner) : (s.owner || '')),
      el('td', {}, s.user || '—')));
    body.replaceChildren(table('Devices', ['Node', 'Device', 'Held by', 'User'], rows));
  }, onError);
  // the history is written by the host's own sampler: polled, so that its
  // last step shows even when no device changes after it
  const stopHistory = poll(async () => {
    const now = Date.now();
    const h = await call('GET', `/loom/v1/history/devices?from=${now - HOUR_MS}&to=${now}`);
    const series = heldOverTime(h.changes, now);
    if (chart) {
      chart.data.datasets = [...series].map(([holder, data], i) => ({
        label: holder, data, stepped: true, pointRadius: 0, borderColor: COLOURS[i % COLOURS.length] }));
      chart.update();
    }
    summary.textContent = `${h.changes.length} change(s) of holder in the last hour, ${series.size} holder(s)`;
  }, onError);
  return () => { stopTable(); stopHistory(); };
}
