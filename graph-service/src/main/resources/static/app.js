/*
 * Wattgraph service map: the page's wiring. Reads /api/v1/service-graph, /api/v1/projections/host,
 * /api/v1/analysis/critical-path, /api/v1/history, /api/v1/hosts, /api/v1/http-routes and
 * /api/v1/power/budgets/current; posts /api/v1/placement and /api/v1/power/budgets. A bearer token typed into the
 * page (or given once as #token=...) is sent with every call as a header and kept in sessionStorage, never in
 * a URL. Every value from the API is inserted as text (textContent / attributes), never as HTML.
 * The libraries (vendor/) are the npm packages of graph-service/package.json, copied in by the Maven build.
 */
import { $, api, el, fmt, fmtBytes, query, status } from './js/util.js';
import { ServiceMap, PCTS, latencyKey, pctSuffix } from './js/map.js';
import { Charts, LatencySamples } from './js/charts.js';
import { TimeRange } from './js/timerange.js';
import * as panels from './js/panels.js';
import * as power from './js/power.js';
import { showRoutes } from './js/routes.js';
import { Health } from './js/health.js';

const state = { graph: null, path: null, hosts: [], timer: null, detail: null, selection: [], refreshes: 0 };
const samples = new LatencySamples();
const charts = new Charts($('charts'));
const powerCharts = new Charts($('powerCharts'));
const range = new TimeRange(() => refresh());
const map = new ServiceMap($('map'), { select: (key) => select(key ? [key] : []) });
window.serviceMap = map; // for the browser tests and the benchmark: what is drawn, where
const health = new Health(() => refresh(), () => $('live').checked);

// ---------------------------------------------------------------- selection, detail, charts

/** Selects {@code keys} (node ids or SOURCE>TARGET; the first one's detail is shown) and remembers what they are. */
function select(keys) {
  const found = keys.filter((k) => map.cy.getElementById(k).nonempty());
  map.select(found);
  state.detail = found[0] || (found.length === 0 && keys.length ? keys[0] : null);
  const level = $('level').value;
  state.selection = found.map((k) => {
    const e = map.cy.getElementById(k);
    return e.isEdge() ? { level, edge: { source: e.source().data(), target: e.target().data() } }
      : { level, node: e.data() };
  });
  $('focus').disabled = found.length === 0;
  showDetail(state.detail);
  showCharts();
}

function showCharts() {
  const key = state.detail;
  const e = key ? map.cy.getElementById(key) : null;
  if (!e || e.empty()) { charts.show(null); return; }
  let bounds;
  try { bounds = range.bounds(); } catch (err) { bounds = { fromNs: null, toNs: null }; }
  charts.show({ key, node: e.isNode() ? e.data() : null }, { ...bounds, label: range.describe() },
    samples.get($('level').value, key));
}

/** The selected node's or edge's ('SOURCE>TARGET') properties, latencies per percentile included. */
function showDetail(key) {
  const box = $('detail');
  box.textContent = '';
  const g = state.graph;
  if (!g || !key) return;
  const node = g.nodes.find((nd) => nd.id === key);
  const edge = node ? null : g.edges.find((e) => e.source + '>' + e.target === key);
  if (!node && !edge) return;
  const ms = (v) => (v == null ? '–' : fmt(v) + ' ms');
  const rows = [];
  if (edge) {
    box.appendChild(el('h3', { text: edge.source + ' → ' + edge.target }));
    rows.push(['bytes c→s / s→c', fmtBytes(edge.bytesClientToServer) + ' / ' + fmtBytes(edge.bytesServerToClient), 'bytes']);
    rows.push(['connections', String(edge.connections), 'connections']);
    rows.push(['requests', edge.requestRate == null ? '–' : fmt(edge.requestRate, 1) + ' /s', 'requests']);
    for (const p of PCTS) {
      rows.push([p + ' client RTT', ms(edge[latencyKey(p)]), 'client-' + p]);
      rows.push([p + ' server time', ms(edge['serverTime' + pctSuffix(p)]), 'server-' + p]);
    }
    rows.push(['network time (mean RTT − server)', ms(edge.networkTimeMs), 'network']);
    rows.push(['seen', when(edge.firstSeenNs) + ' – ' + when(edge.lastSeenNs), 'seen']);
  } else {
    const m = node.metrics || {};
    box.appendChild(el('h3', { text: node.name && node.name !== node.id ? node.name + ' (' + node.id + ')' : node.id }));
    rows.push(['kind', node.kind + (node.hostId ? ' on ' + node.hostId : '') + (node.members > 1
      ? ', ' + node.members + ' processes' : '')]);
    if (node.namespace || node.pod) rows.push(['pod', (node.namespace || '–') + ' / ' + (node.pod || '–'), 'pod']);
    rows.push(['requests served', m.requestRate == null ? '–' : fmt(m.requestRate, 1) + ' /s', 'requests']);
    rows.push(['utilisation (Eq. 3.3)', m.utilization == null ? '–' : fmt(100 * m.utilization, 1) + ' %', 'utilization']);
    rows.push(['CPU', m.cpuUsage == null ? '–' : fmt(m.cpuUsage) + ' cores', 'cpu']);
    rows.push(['power', m.powerW == null ? '–' : fmt(m.powerW) + ' W', 'power']);
    for (const p of PCTS) rows.push([p + ' server time', ms(m[latencyKey(p)]), 'server-' + p]);
  }
  const t = el('table', { id: 'detailTable', 'data-detail': key });
  for (const [k, v, attr] of rows) {
    t.appendChild(el('tr', { 'data-row': attr || null }, el('th', { text: k }), el('td', { class: 'num', text: v })));
  }
  box.appendChild(t);
  if (node && node.kind !== 'external') showRoutes(box, node);
}

/** A Unix-ns instant as local date and time (to the second). */
function when(ns) {
  if (ns == null) return '–';
  const d = new Date(Number(BigInt(ns) / 1000000n));
  return d.toLocaleString();
}

/** The power panel's charts over the time range, with the budgets computed last (state.computed). */
function showPowerCharts() {
  if (!state.power) return;
  let bounds;
  try { bounds = range.bounds(); } catch (err) { bounds = { fromNs: null, toNs: null }; }
  power.drawCharts(powerCharts, state.power, { ...bounds, label: range.describe() }, state.computed);
}

async function computePower() {
  const budgets = await power.compute($('level').value, $('namespace').value);
  if (budgets) {
    state.computed = new Map(budgets.map((b) => [b.host, b.budgetW]));
    showPowerCharts();
  }
}

// ---------------------------------------------------------------- search and focus

function showSearch() {
  const hits = map.search($('search').value);
  const list = $('searchResults');
  list.textContent = '';
  $('searchCount').textContent = $('search').value.trim() ? hits.length + ' found' : '';
  for (const d of hits.slice(0, 12)) {
    const b = el('button', { type: 'button', 'data-node-id': d.id }, d.label,
      el('span', { class: 'meta', text: ' ' + [d.kind, d.namespace, d.hostId].filter(Boolean).join(' · ') }));
    b.addEventListener('click', () => pick(d.id));
    list.appendChild(el('li', {}, b));
  }
  list.hidden = hits.length === 0;
}

function pick(id) {
  select([id]);
  map.reveal(id);
  $('searchResults').hidden = true;
}

// ---------------------------------------------------------------- data loading

/** The hosts (for the host filter, the power panel and the data's age), every refresh. */
async function loadHosts() {
  try {
    const h = await api('/api/v1/hosts');
    state.hosts = h.hosts.map((x) => x.id);
    const sel = $('host'), keep = sel.value;
    while (sel.options.length > 1) sel.remove(1);
    for (const id of state.hosts) sel.appendChild(el('option', { value: id, text: id }));
    sel.value = state.hosts.includes(keep) ? keep : '';
    return h.hosts;
  } catch (e) {
    if (e.status === 401) e.message += ' — type a bearer token above';
    throw e;
  }
}

function updateNamespaces(graph) {
  const sel = $('namespace'), keep = sel.value;
  const ns = new Set(Array.from(sel.options).slice(1).map((o) => o.value));
  for (const nd of graph.nodes) if (nd.namespace) ns.add(nd.namespace);
  while (sel.options.length > 1) sel.remove(1);
  for (const n of Array.from(ns).sort()) sel.appendChild(el('option', { value: n, text: n }));
  sel.value = keep;
}

async function drawMap() {
  if (!state.graph) return;
  const level = $('level').value;
  await map.render(state.graph, { level, hosts: state.hosts, path: state.path, percentile: $('percentile').value,
    latencyOf: $('latencyOf').value, sizeBy: $('sizeBy').value, groupBy: $('groupBy').value });
  const s = map.summary;
  $('mapSummary').textContent = s.nodes + ' nodes, ' + s.edges + ' edges at ' + level + ' level, '
    + range.describe() + '; size = ' + s.sizeBy;
  const box = $('map');
  box.setAttribute('data-nodes', s.nodes);
  box.setAttribute('data-edges', s.edges);
  box.setAttribute('data-level', level);
  $('mapEmpty').hidden = s.nodes > 0;
  $('mapEmpty').textContent = 'No traffic at ' + level + ' level in ' + range.describe() + '.';
  // The selection carries over: at another level it becomes the groups (or members) of what was selected.
  const keys = state.selection.some((s2) => s2.level !== level) ? map.carry(state.selection)
    : state.detail ? [state.detail, ...state.selection.map(selKey).filter((k) => k !== state.detail)] : [];
  select(keys);
  if ($('search').value.trim()) showSearch();
}

const selKey = (s) => (s.node ? s.node.id : s.edge.source.id + '>' + s.edge.target.id);

async function refresh() {
  let bounds;
  try {
    bounds = range.bounds();
  } catch (e) {
    status(e.message, true);
    return;
  }
  status('loading…');
  try {
    const level = $('level').value;
    // The hosts and the graph at once (one round trip, not two); again in the rare case that the chosen host
    // is gone from the new host list (loadHosts then clears the filter).
    const fetchGraph = () => {
      const f = { host: $('host').value, namespace: $('namespace').value, fromNs: bounds.fromNs, toNs: bounds.toNs };
      return Promise.all([f.host, api('/api/v1/service-graph' + query({ level, ...f })),
        api('/api/v1/projections/host' + query(f)),
        api('/api/v1/analysis/critical-path' + query({ level, ...f, percentile: $('percentile').value,
          mode: $('mode').value })).catch(() => null)]); // no path is no highlight, not an error
    };
    const hostsLoaded = loadHosts(), graphLoaded = fetchGraph();
    graphLoaded.catch(() => {}); // a failure of the hosts is the one reported (it names the token, or Neo4j)
    const hosts = await hostsLoaded;
    let [asked, graph, matrix, cp] = await graphLoaded;
    if (asked !== $('host').value) [asked, graph, matrix, cp] = await fetchGraph();
    state.graph = graph;
    state.path = cp;
    samples.record(level, graph, Date.now());
    updateNamespaces(graph);
    await drawMap();
    // The map on screen before the panels are built (at most 100 ms: no frames come while the page is hidden).
    await new Promise((r) => { requestAnimationFrame(() => setTimeout(r)); setTimeout(r, 100); });
    panels.drawHeatmap(matrix);
    panels.drawCritical(cp, $('percentile').value);
    await panels.httpRoutes($('host').value, (id) => {
      const nd = state.graph && state.graph.nodes.find((n) => n.id === id);
      return nd && nd.name && nd.name !== id ? nd.name + ' (' + id + ')' : id;
    });
    await panels.budgetLoop();
    state.power = await power.load(hosts, bounds);
    showPowerCharts();
    status('updated ' + new Date().toLocaleTimeString());
    health.ok(hosts);
    document.body.setAttribute('data-loaded', 'true');
    document.body.setAttribute('data-refreshes', String(++state.refreshes));
  } catch (e) {
    status(e.message, true);
    health.failed(e);
  }
}

// ---------------------------------------------------------------- wiring

function init() {
  const params = new URLSearchParams(location.search);
  // A token may come once in the fragment (#token=...: never sent to the server, so not in its logs); it is
  // moved to sessionStorage and dropped from the address bar and history entry.
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.get('token')) {
    sessionStorage.setItem('wattgraph.token', fragment.get('token').trim());
    history.replaceState(null, '', location.pathname + location.search);
  }
  $('token').value = sessionStorage.getItem('wattgraph.token') || '';
  for (const k of ['level', 'percentile', 'latencyOf', 'mode', 'sizeBy', 'groupBy']) {
    if (params.get(k)) $(k).value = params.get(k);
  }
  range.set(params.get('range'));
  // ?detail=NODE or ?detail=SOURCE>TARGET opens a detail after the first load.
  if (params.get('detail')) state.detail = params.get('detail');
  $('token').addEventListener('change', () => {
    sessionStorage.setItem('wattgraph.token', $('token').value.trim());
    state.hosts = [];
    refresh();
  });
  $('controls').addEventListener('submit', (e) => { e.preventDefault(); refresh(); });
  for (const id of ['level', 'host', 'namespace', 'percentile', 'mode']) $(id).addEventListener('change', refresh);
  for (const id of ['sizeBy', 'latencyOf', 'groupBy']) $(id).addEventListener('change', drawMap);
  $('live').addEventListener('change', () => {
    clearInterval(state.timer);
    if ($('live').checked) state.timer = setInterval(refresh, 10000);
  });
  $('search').addEventListener('input', showSearch);
  $('search').addEventListener('keydown', (e) => {
    if (e.key !== 'Enter') return;
    e.preventDefault();
    const first = $('searchResults').querySelector('button');
    if (first) pick(first.getAttribute('data-node-id'));
  });
  $('zoomIn').addEventListener('click', () => map.zoomBy(1.4));
  $('zoomOut').addEventListener('click', () => map.zoomBy(1 / 1.4));
  $('fit').addEventListener('click', () => map.fit());
  $('focus').addEventListener('click', () => map.focus());
  $('unfocus').addEventListener('click', () => { map.unfocus(); map.fit(); });
  $('relayout').addEventListener('click', () => map.relayout());
  const placement = () => panels.placement($('level').value, $('namespace').value, (r, lvl) => map.showPlacement(r, lvl));
  $('placementForm').addEventListener('submit', (e) => { e.preventDefault(); placement(); });
  $('powerForm').addEventListener('submit', (e) => { e.preventDefault(); computePower(); });
  // ?run=placement,power runs the panels once after the first load.
  const run = (params.get('run') || '').split(',');
  refresh().then(() => Promise.all([run.includes('placement') ? placement() : null,
    run.includes('power') ? computePower() : null]))
    .then(() => document.body.setAttribute('data-panels', 'done'));
}

init();
