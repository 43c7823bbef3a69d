// The console's router: every page is a bookmarkable URL (#/execs,
// #/execs/ID, #/submit, #/tuning, #/tuning/NAME, #/devices, #/models,
// #/models/NAME, #/plans, #/plugins, #/logon); a page without a session
// goes to the log-on page and comes back after it.
import { call, setCsrf, ApiError } from './api.js';
import { logonPage } from './pages/logon.js';
import { execsPage, execPage } from './pages/execs.js';
import { devicesPage } from './pages/devices.js';
import { modelsPage, modelPage } from './pages/models.js';
import { plansPage } from './pages/plans.js';
import { submitPage } from './pages/submit.js';
import { pluginsPage } from './pages/plugins.js';
import { tuningListPage, tuningPage } from './pages/tuning.js';

const main = document.getElementById('main');
const status = document.getElementById('status');
let session = null;
let stopPage = null; // the current page's timers

// A message in the status line, brought into sight when a long page was
// scrolled past it (a refusal of the form at the bottom shows).
export function say(text) {
  status.textContent = text || '';
  if (text && status.getBoundingClientRect().bottom < 0) status.scrollIntoView({ block: 'nearest' });
}

function showSession() {
  document.getElementById('nav').hidden = !session;
  document.getElementById('logout').hidden = !session;
  document.getElementById('who').textContent = session ? `${session.user} (${session.role})` : '';
}

export function loggedOn(s) {
  session = s;
  setCsrf(s.csrfToken);
  showSession();
}

async function currentSession() {
  if (session) return session;
  try { loggedOn(await call('GET', '/console/session')); } catch (e) { session = null; }
  return session;
}

const routes = [
  [/^#\/execs\/([^/]+)$/, m => execPage(main, decodeURIComponent(m[1]))],
  [/^#\/execs$/, () => execsPage(main)],
  [/^#\/submit$/, () => submitPage(main)],
  [/^#\/plugins$/, () => pluginsPage(main)],
  [/^#\/tuning\/([^/]+)$/, m => tuningPage(main, decodeURIComponent(m[1]))],
  [/^#\/tuning$/, () => tuningListPage(main)],
  [/^#\/devices$/, () => devicesPage(main)],
  [/^#\/models\/([^/]+)$/, m => modelPage(main, decodeURIComponent(m[1]))],
  [/^#\/models$/, () => modelsPage(main)],
  [/^#\/plans$/, () => plansPage(main)],
];

async function route() {
  if (stopPage) { stopPage(); stopPage = null; }
  say('');
  // the next page says again how it is kept up to date
  document.getElementById('updates').hidden = true;
  delete document.documentElement.dataset.updates;
  const hash = location.hash || '#/execs';
  if (hash.startsWith('#/logon')) { showSession(); stopPage = logonPage(main); return; }
  if (!(await currentSession())) {
    location.replace('#/logon?next=' + encodeURIComponent(hash));
    return;
  }
  for (const [re, page] of routes) {
    const m = hash.match(re);
    if (m) { stopPage = page(m) || null; main.focus(); return; }
  }
  main.replaceChildren();
  say(`No page ${hash}`);
}

export function onError(e) {
  if (e instanceof ApiError && e.status === 401) {
    session = null;
    location.hash = '#/logon?next=' + encodeURIComponent(location.hash);
    return;
  }
  say(e.message);
}

document.getElementById('logout').addEventListener('click', async () => {
  try { await call('POST', '/console/logout'); } catch (e) { /* gone already */ }
  session = null; setCsrf(null); showSession();
  location.hash = '#/logon';
});
window.addEventListener('hashchange', route);
route();
