/*
 * The HTTP routes of the selected node (GET /api/v1/http-routes, latest window): a process's, container's or host's
 * own; for a pod, service or namespace those of its processes (the routes are kept per process, container and host).
 */
import { api, el, fmt, query } from './util.js';

const OWN = new Set(['process', 'container', 'host']);

/** The processes of a pod, service or namespace node {@code d}: id -> label (from the process-level graph). */
async function members(d) {
  const g = await api('/api/v1/service-graph' + query({ level: 'process', namespace: d.namespace }));
  const name = d.id.slice(d.id.indexOf('/') + 1);
  const match = (n) => n.kind === 'process' && n.namespace === d.namespace
    && (d.kind === 'namespace' || (d.kind === 'pod' ? n.pod === name : n.service === name));
  return new Map(g.nodes.filter(match).map((n) => [n.id, n.name && n.name !== n.id ? n.name + ' (' + n.id + ')' : n.id]));
}

const routes = (level, host) => api('/api/v1/http-routes' + query({ level, role: 'any', host: host || '', limit: '10000' }));

/** The routes of map node {@code d} (its data) and its processes' labels; null when none are kept at its level. */
export async function routesOf(d) {
  if (OWN.has(d.kind)) {
    const id = d.kind === 'process' ? d.id : d.id.slice(d.id.indexOf(':') + 1);
    return { rows: (await routes(d.kind, d.hostId)).filter((r) => r.entityId === id), names: null };
  }
  if (!['pod', 'service', 'namespace'].includes(d.kind) || !d.namespace) return null;
  const names = await members(d);
  return { rows: (await routes('process', d.hostId)).filter((r) => names.has(r.entityId)), names };
}

/** Appends the routes table of node {@code d} to {@code box}, slowest p99 first. */
export async function showRoutes(box, d) {
  const wrap = el('div', { id: 'detailRoutes', 'data-for': d.id }, el('h3', { text: 'HTTP routes' }));
  box.appendChild(wrap);
  let found;
  try {
    found = await routesOf(d);
  } catch (e) {
    wrap.appendChild(el('div', { class: 'error', text: e.message }));
    return;
  }
  if (found === null) {
    wrap.appendChild(el('div', { class: 'meta', text: 'No routes at ' + d.kind + ' level: they are kept per process, '
      + 'container and host.' }));
    return;
  }
  const { rows, names } = found;
  if (rows.length === 0) {
    wrap.appendChild(el('div', { class: 'meta', text: 'No HTTP/1.x route seen in the latest window.' }));
    return;
  }
  rows.sort((a, b) => b.p99Ms - a.p99Ms);
  const own = names === null;
  const t = el('table', { id: 'detailRoutesTable' }, el('tr', {}, ...[own ? null : 'process', 'role', 'route',
    'requests', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms'].filter(Boolean).map((h) => el('th', { text: h }))));
  for (const r of rows) {
    const route = r.method + ' ' + r.path + (r.pathTruncated ? '…' : '');
    t.appendChild(el('tr', { 'data-route': r.role + ' ' + route, 'data-entity': r.entityId },
      own ? null : el('td', { text: names.get(r.entityId) }), el('td', { text: r.role.toLowerCase() }),
      el('td', { text: route }), el('td', { class: 'num', text: String(r.transactions) }),
      ...[r.requestRate, r.p50Ms, r.p90Ms, r.p99Ms].map((v) => el('td', { class: 'num', text: fmt(v) }))));
  }
  wrap.appendChild(t);
  wrap.appendChild(el('div', { class: 'meta', text: 'latest window; server = time serving, client = round trip' }));
}
