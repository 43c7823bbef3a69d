// The console's one way to the host: the REST API on this origin, with the
// session cookie the browser sends and the CSRF token kept in memory (never
// in storage) for every call that changes something.
let csrf = null;

export class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

export function setCsrf(token) { csrf = token; }

export async function call(method, path, body) {
  const headers = { Accept: 'application/json' };
  if (method !== 'GET' && csrf) headers['X-CSRF-Token'] = csrf;
  let payload;
  if (body !== undefined) { headers['Content-Type'] = 'application/json'; payload = JSON.stringify(body); }
  return reply(await fetch(path, { method, headers, body: payload, credentials: 'same-origin' }));
}

// A reply's JSON, or an ApiError with the host's message.
async function reply(res) {
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = text; }
  if (!res.ok) throw new ApiError(res.status, (data && data.error) || `${res.status} ${res.statusText}`);
  return data;
}

// A multipart form (a file upload): the browser sets its Content-Type.
export async function callForm(method, path, form) {
  const headers = { Accept: 'application/json' };
  if (csrf) headers['X-CSRF-Token'] = csrf;
  return reply(await fetch(path, { method, headers, body: form, credentials: 'same-origin' }));
}

export const EXECS = '/platform/rest/deeplearning/v1/execs';
