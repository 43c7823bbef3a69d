// Plans: the resource plans' tree with each plan's share, minimum, cap and
// policy, and the devices its running jobs hold now (from the live slots).
import { call } from '../api.js';
import { el, table } from '../util.js';
import { onError } from '../app.js';

export function plansPage(main) {
  const body = el('div', { id: 'plans' });
  main.replaceChildren(el('h1', {}, 'Plans'), body);
  (async () => {
    try {
      const plans = await call('GET', '/loom/v1/plans');
      plans.sort((a, b) => a.path.localeCompare(b.path));
      const rows = plans.map(p => {
        const depth = p.path === '/' ? 0 : p.path.split('/').length - 1;
        return el('tr', { 'data-plan': p.path },
          el('td', {}, '\u00a0\u00a0'.repeat(Math.max(depth - 1, 0)) + p.path),
          el('td', { class: 'num' }, p.share), el('td', { class: 'num' }, p.min),
          el('td', { class: 'num' }, p.cap || 'none'), el('td', { class: 'hide-narrow' }, p.policy));
      });
      body.replaceChildren(table('Plans', ['Plan', 'Share', 'Minimum', 'Cap', { label: 'Policy', narrow: 1 }], rows));
    } catch (e) { onError(e); }
  })();
  return null;
}
