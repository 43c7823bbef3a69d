// Plans: the resource plans' tree with each plan's share, minimum, cap and
// policy, the devices its jobs (and those of the plans beneath it) hold now
// against what the last scheduling round gave it, and, for administrators,
// its members.
import { call } from '../api.js';
import { el, table } from '../util.js';
import { onError } from '../app.js';

// Members by plan; null for a user who may not list them (not shown then).
async function membersByPlan() {
  const byPlan = new Map();
  try {
    for (const m of await call('GET', '/loom/v1/plan/members')) {
      if (!byPlan.has(m.plan)) byPlan.set(m.plan, []);
      byPlan.get(m.plan).push(m.user);
    }
  } catch (e) { return null; }
  return byPlan;
}

export function plansPage(main) {
  const body = el('div', { id: 'plans' });
  main.replaceChildren(el('h1', {}, 'Plans'), body);
  (async () => {
    try {
      const [plans, members] = await Promise.all([call('GET', '/loom/v1/plans'), membersByPlan()]);
      plans.sort((a, b) => a.path.localeCompare(b.path));
      const rows = plans.map(p => {
        const depth = p.path === '/' ? 0 : p.path.split('/').length - 1;
        const use = el('td', { class: 'num held', title: 'devices held now of those the last round gave' },
          `${p.held} of ${p.given} device(s)`);
        return el('tr', { 'data-plan': p.path },
          el('td', {}, '\u00a0\u00a0'.repeat(Math.max(depth - 1, 0)) + p.path),
          el('td', { class: 'num' }, p.share), use, el('td', { class: 'num' }, p.min),
          el('td', { class: 'num' }, p.cap || 'none'), el('td', { class: 'hide-narrow' }, p.policy),
          members ? el('td', { class: 'hide-narrow members' }, (members.get(p.path) || []).join(', ')) : null);
      });
      const heads = ['Plan', 'Share', 'Holds', 'Minimum', 'Cap', { label: 'Policy', narrow: 1 }];
      if (members) heads.push({ label: 'Members', narrow: 1 });
      body.replaceChildren(table('Plans', heads, rows));
    } catch (e) { onError(e); }
  })();
  return null;
}
