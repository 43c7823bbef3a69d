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
  const res = await fetch(path, { method, headers, body: payload, credentials: 'same-origin' });
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = text; }
  if (!res.ok) throw new ApiError(res.status, (data && data.error) || `${res.status} ${res.statusText}`);
  return data;
}

export const EXECS = '/platform/rest/deeplearning/v1/execs';
