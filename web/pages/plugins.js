// Plugins: the registry (kind, name, version, ABI, origin, state).
import { call } from '../api.js';
import { el, table } from '../util.js';
import { onError } from '../app.js';

export function pluginsPage(main) {
  const body = el('div', { id: 'plugins' });
  main.replaceChildren(el('h1', {}, 'Plugins'), body);
  call('GET', '/loom/v1/plugins').then(list => {
    const rows = list.map(p => el('tr', { 'data-plugin': `${p.kind}/${p.name}` },
      el('td', {}, p.kind), el('td', {}, p.name), el('td', { class: 'hide-narrow' }, p.version),
      el('td', { class: 'hide-narrow' }, p.abi || ''), el('td', {}, p.origin || ''), el('td', {}, p.state || '')));
    body.replaceChildren(table('Plugins', ['Kind', 'Name', { label: 'Version', narrow: 1 },
                                           { label: 'ABI', narrow: 1 }, 'Origin', 'State'], rows));
  }).catch(onError);
  return null;
}
