// Devices: every device and what holds it (an exec, a tuning experiment or a
// model's instance, and its user), polled every 2 s.
import { call } from '../api.js';
import { el, table } from '../util.js';
import { onError } from '../app.js';

export function devicesPage(main) {
  const body = el('div', { id: 'devices' });
  main.replaceChildren(el('h1', {}, 'Devices'), body);
  let timer = null, stopped = false;
  const tick = async () => {
    try {
      const slots = await call('GET', '/loom/v1/slots');
      const rows = slots.map(s => el('tr', { 'data-slot': s.slot },
        el('td', {}, s.node || 'this host'), el('td', {}, `${s.kind} ${s.index}`),
        el('td', {}, s.held ? (s.holder ? `${s.holder} ` : '') : 'free',
           s.held && s.owner && s.owner !== "another user's"
             ? el('a', { href: `#/execs/${encodeURIComponent(s.owner)}` }, s.owner) : (s.owner || '')),
        el('td', {}, s.user || '—')));
      body.replaceChildren(table('Devices', ['Node', 'Device', 'Held by', 'User'], rows));
    } catch (e) { onError(e); }
    if (!stopped) timer = setTimeout(tick, 2000);
  };
  tick();
  return () => { stopped = true; clearTimeout(timer); };
}
