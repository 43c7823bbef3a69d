// Submit an exec: the model directory as a tar (gzip'd or not) or a zip, and
// dlicmd's settings, sent as the CLI sends them (multipart args and file);
// the host's validation errors are shown as they come.
import { call, callForm, EXECS } from '../api.js';
import { el, field } from '../util.js';
import { say } from '../app.js';

// The archive's name without .tar, .tar.gz, .tgz or .zip: the model
// directory's.
function stem(name) {
  return name.replace(/\.(tar\.gz|tgz|tar|zip)$/i, '');
}

export function submitPage(main) {
  const framework = el('select', { required: '' });
  const file = el('input', { type: 'file', accept: '.tar,.tar.gz,.tgz,.zip', required: '' });
  const dir = el('input', { required: '', pattern: '[A-Za-z0-9._\\-]+' });
  const mainFile = el('input', { placeholder: 'edt.json, train.py' });
  const workers = el('input', { type: 'number', min: '1', max: '1024', value: '1', required: '' });
  const devices = el('input', { type: 'number', min: '1', max: '64', value: '1', required: '' });
  const plan = el('input', { placeholder: 'your own /USER' });
  const env = el('textarea', { rows: '3', placeholder: 'KEY=VALUE, one a line' });
  const extra = el('input', { placeholder: '--epochs 3' });
  file.addEventListener('change', () => { if (file.files[0] && !dir.value) dir.value = stem(file.files[0].name); });
  const form = el('form', { class: 'submit', id: 'submit-form' },
    field('submit-framework', 'Framework', framework),
    field('submit-file', 'Model directory (a tar or a zip)', file),
    field('submit-dir', 'Model directory name', dir),
    field('submit-main', 'Main file', mainFile),
    field('submit-workers', 'Workers', workers),
    field('submit-devices', 'Devices per worker', devices),
    field('submit-plan', 'Plan', plan),
    field('submit-env', 'Environment', env),
    field('submit-args', 'Program arguments', extra),
    el('button', { type: 'submit', id: 'submit-go' }, 'Submit'));
  main.replaceChildren(el('h1', {}, 'Submit an exec'), form);
  call('GET', `${EXECS}/frameworks`).then(list => {
    framework.replaceChildren(...list.map(f => el('option', { value: f.name }, f.name)));
    if (list.some(f => f.name === 'edt')) framework.value = 'edt';
  }).catch(e => say(e.message));
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    say('');
    const words = ['--exec-start', framework.value, '--model-dir', dir.value,
                   '--numWorker', workers.value, '--workerDeviceNum', devices.value];
    if (mainFile.value) words.push('--model-main', mainFile.value);
    if (plan.value) words.push('--consumer', plan.value);
    for (const line of env.value.split('\n').map(l => l.trim()).filter(Boolean)) words.push('--msd-env', line);
    let args = words.join(' ');
    if (extra.value.trim()) args += ' -- ' + extra.value.trim();
    const body = new FormData();
    body.append('args', args);
    body.append('file', file.files[0], file.files[0].name);
    try {
      const x = await callForm('POST', EXECS, body);
      location.hash = `#/execs/${encodeURIComponent(x.id)}`;
      if (x.warnings && x.warnings.length) say(x.warnings.join(' '));
    } catch (e) {
      say(`Refused: ${e.message}`);
    }
  });
  return null;
}
