// The log-on page: user and password to POST /console/logon, which sets the
// session cookie (HttpOnly) and answers the CSRF token kept in memory.
import { call } from '../api.js';
import { el } from '../util.js';
import { loggedOn, say } from '../app.js';

export function logonPage(main) {
  const user = el('input', { id: 'user', name: 'user', autocomplete: 'username', required: '' });
  const password = el('input', { id: 'password', name: 'password', type: 'password',
                                 autocomplete: 'current-password', required: '' });
  const form = el('form', { class: 'logon', id: 'logon-form' },
    el('label', { for: 'user' }, 'User', user),
    el('label', { for: 'password' }, 'Password', password),
    el('button', { type: 'submit', id: 'logon-submit' }, 'Log on'));
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    say('');
    try {
      loggedOn(await call('POST', '/console/logon', { user: user.value, password: password.value }));
      password.value = '';
      const next = new URLSearchParams(location.hash.split('?')[1] || '').get('next');
      location.hash = next && next.startsWith('#/') && !next.startsWith('#/logon') ? next : '#/execs';
    } catch (e) {
      say(`Log-on refused: ${e.message}`);
      password.focus();
    }
  });
  main.replaceChildren(el('h1', {}, 'Log on to loom'), form);
  user.focus();
  return null;
}
