/*
 * Shared by the page's modules: DOM building (values always as text, never as HTML), number formatting, the
 * status line and the API client (the bearer token from the page's field, sent as a header, never in a URL).
 */
export const $ = (id) => document.getElementById(id);

export function el(tag, attrs, ...children) {
  const e = tag === 'svg' || SVG_TAGS.has(tag) ? document.createElementNS('http://www.w3.org/2000/svg', tag)
    : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === 'class') e.setAttribute('class', v);
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
  return e;
}
const SVG_TAGS = new Set(['g', 'rect', 'text', 'title']);

export function fmtBytes(b) {
  if (b === null || b === undefined) return '–';
  const u = ['B', 'kB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (Math.abs(b) >= 1000 && i < u.length - 1) { b /= 1000; i++; }
  return (i === 0 ? b.toFixed(0) : b.toFixed(b < 10 ? 2 : 1)) + ' ' + u[i];
}

/** A duration in ms as people say it: "4 s", "3 min", "1.5 h". */
export function ago(ms) {
  const s = Math.max(0, ms / 1000);
  return s < 120 ? s.toFixed(0) + ' s' : s < 7200 ? (s / 60).toFixed(0) + ' min' : (s / 3600).toFixed(1) + ' h';
}

export const fmt = (x, d = 2) => (x === null || x === undefined || Number.isNaN(x) ? '–' : Number(x).toFixed(d));

export function status(msg, error) {
  const s = $('status');
  s.textContent = msg || '';
  s.className = error ? 'error' : '';
}

export async function api(path, body) {
  const headers = { Accept: 'application/json' };
  const token = $('token').value.trim();
  if (token) headers.Authorization = 'Bearer ' + token;
  const init = { headers };
  if (body !== undefined) {
    init.method = 'POST';
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const text = await r.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch (e) { /* not JSON */ }
  if (!r.ok) {
    const msg = json && json.error ? json.error + (json.parameter ? ' (' + json.parameter + ')' : '') : text;
    const err = new Error(r.status + ' ' + path.split('?')[0] + ': ' + msg);
    err.status = r.status;
    throw err;
  }
  return json;
}

/** A query string from the non-empty values of {@code params}. */
export function query(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== '') p.set(k, v);
  const s = p.toString();
  return s ? '?' + s : '';
}

export function table(headers, rows) {
  const t = el('table', {}, el('tr', {}, ...headers.map((h) => el('th', { text: h }))));
  for (const r of rows) {
    t.appendChild(el('tr', {}, ...r.map((c) => typeof c === 'number' ? el('td', { class: 'num', text: fmt(c) })
      : el('td', { text: c == null ? '–' : String(c) }))));
  }
  return t;
}
