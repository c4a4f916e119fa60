/*
 * The service map on Cytoscape.js (canvas: zoom, pan, thousands of nodes) with the fcose layout (fast, and the
 * one of Cytoscape's force layouts built for compound nodes, which the host/namespace groups are).
 * Positions are kept per level and grouping (in memory and localStorage): a refresh moves no node that is
 * already on the map, and a new node is placed near the neighbours it has there (positions.js).
 */
/* global cytoscape */
import { $, el, fmt, fmtBytes } from './util.js';
import { PositionStore, placeNear, unstack } from './positions.js';

const PALETTE = ['#4263eb', '#0ca678', '#ae3ec9', '#f59f00', '#1098ad', '#e64980', '#74b816', '#7048e8',
  '#fd7e14', '#15aabf'];
export const PCTS = ['avg', 'p50', 'p75', 'p90', 'p99'];
export const LATENCY_OF = { client: 'client RTT', server: 'server time' };
// Edge latency shown: client round trip (latency*Ms: the stream job's clientRtt*Ns) or server time (serverTime*Ms).
export const pctSuffix = (p) => (p === 'avg' ? 'Avg' : p.toUpperCase()) + 'Ms';
export const latencyKey = (p) => 'latency' + pctSuffix(p);
const edgeLatencyKey = (p, of) => (of === 'server' ? 'serverTime' : 'latency') + pctSuffix(p);
const GREY = '#aab4bf';
// Above this many nodes a first layout is a "draft" (spectral only): proof-quality fcose takes seconds there.
const DRAFT_ABOVE = 1200;
const LARGE = 3000; // elements (nodes and edges) above which drawing is simplified, see render()
// Below this zoom a large map is an overview: nodes without labels (a crowded map shows them from this zoom
// anyway: 'min-zoomed-font-size' 24 over a 10 px font), edges as haystack lines without arrows. Measuring 2,000
// labels and styling 6,000 arrowed edges for bounds and drawing was much of the first render
// (docs/benchmarks/service-map.md).
const DETAIL_ZOOM = 2.4;

/** Mirrors the service's Aggregator.groupId: the id that node {@code n} (its fields) has at {@code level}. */
export function groupId(n, level) {
  if (n.kind === 'external') return n.id;
  const ns = n.namespace == null ? '' : n.namespace;
  switch (level) {
    case 'container': return n.containerId != null ? 'container:' + n.containerId : n.id;
    case 'pod': return n.pod != null ? 'pod:' + ns + '/' + n.pod : groupId(n, 'container');
    case 'service': return n.service != null ? 'service:' + ns + '/' + n.service : groupId(n, 'pod');
    case 'namespace': return n.namespace != null ? 'namespace:' + n.namespace : groupId(n, 'container');
    case 'host': return n.hostId != null ? 'host:' + n.hostId : n.id;
    default: return n.id;
  }
}

export function latencyColour(t) { // 0 → green, 0.5 → orange, 1 → red
  const stops = [[43, 138, 62], [240, 140, 0], [201, 42, 42]];
  const x = Math.max(0, Math.min(1, t)) * 2;
  const i = Math.min(1, Math.floor(x));
  const f = x - i;
  const c = stops[i].map((v, j) => Math.round(v + (stops[i + 1][j] - v) * f));
  return 'rgb(' + c.join(',') + ')';
}

const STYLE = [
  { selector: 'node', style: {
    width: 'data(size)', height: 'data(size)', 'background-color': 'data(colour)', 'background-opacity': 0.85,
    'border-width': 1.5, 'border-color': '#fff', label: 'data(label)', 'font-size': 10, color: '#33404d',
    'text-valign': 'bottom', 'text-margin-y': 3, 'text-outline-color': '#fbfcfd', 'text-outline-width': 2,
    'min-zoomed-font-size': 7 } },
  { selector: 'node.external', style: { 'background-color': '#fff', 'background-opacity': 1,
    'border-color': '#868e96', 'border-style': 'dashed' } },
  { selector: ':parent', style: { 'background-color': '#eef2f6', 'background-opacity': 0.6, 'border-color': '#c3ccd6',
    'border-width': 1, shape: 'round-rectangle', 'text-valign': 'top', 'text-halign': 'center', 'text-margin-y': -2,
    'font-size': 11, color: '#6b7785', padding: 14 } },
  { selector: 'edge', style: {
    width: 'data(width)', 'line-color': 'data(colour)', 'target-arrow-color': 'data(colour)',
    'target-arrow-shape': 'triangle', 'arrow-scale': 0.8, 'curve-style': 'bezier', opacity: 0.85 } },
  { selector: 'edge.straight', style: { 'curve-style': 'straight' } },
  { selector: 'node.crowded', style: { 'min-zoomed-font-size': 24 } }, // labels once zoomed in
  { selector: 'node.overview', style: { label: '' } },
  { selector: 'edge.overview', style: { 'curve-style': 'haystack', 'target-arrow-shape': 'none' } },
  { selector: 'node.critical', style: { 'border-color': '#c2410c', 'border-width': 4 } },
  { selector: 'edge.critical', style: { 'underlay-color': '#c2410c', 'underlay-opacity': 0.45,
    'underlay-padding': 4 } },
  // Notes on edges: the critical path's latency per hop, and the cross-node bytes a placement move saves.
  { selector: 'edge[?note]', style: { label: 'data(note)', 'font-size': 10, color: '#1d2733', 'text-wrap': 'wrap',
    'text-background-color': '#fff', 'text-background-opacity': 0.9, 'text-background-padding': 2,
    'text-rotation': 'autorotate', 'min-zoomed-font-size': 6 } },
  { selector: 'node.moved', style: { 'border-color': '#7048e8', 'border-width': 5, 'border-style': 'double',
    label: 'data(moveLabel)', 'text-wrap': 'wrap', color: '#5f3dc4' } },
  { selector: 'edge.localised', style: { 'line-style': 'dashed' } },
  { selector: 'node.match', style: { 'border-color': '#f59f00', 'border-width': 5 } },
  { selector: ':selected', style: { 'overlay-color': '#1d2733', 'overlay-opacity': 0.18, 'overlay-padding': 6 } },
  { selector: '.hidden', style: { display: 'none' } },
];

export class ServiceMap {
  /** handlers.select(key | null): a node id, SOURCE>TARGET for an edge, or null when the selection is cleared. */
  constructor(container, handlers) {
    this.handlers = handlers;
    this.store = new PositionStore(window.localStorage);
    this.cy = cytoscape({ container, style: STYLE, minZoom: 0.02, maxZoom: 5, boxSelectionEnabled: false,
      selectionType: 'single' });
    this.key = null;
    this.level = 'process';
    this.focused = false;
    this.summary = { nodes: 0, edges: 0 };
    this.placement = null;
    const cy = this.cy;
    cy.on('tap', 'node, edge', (ev) => {
      if (ev.target.isParent()) return;
      this.handlers.select(ev.target.id());
    });
    cy.on('tap', (ev) => { if (ev.target === cy) this.handlers.select(null); });
    cy.on('dbltap', 'node', (ev) => { if (!ev.target.isParent()) this.focus(); });
    cy.on('dragfree', 'node', () => this.savePositions());
    // The box changes size with the page (a scrollbar appearing, a narrower window): Cytoscape must know.
    new ResizeObserver(() => cy.resize()).observe(container);
    const tip = $('mapTip');
    const place = (ev) => {
      if (!ev.renderedPosition) return;
      tip.style.left = (ev.renderedPosition.x + 14) + 'px';
      tip.style.top = (ev.renderedPosition.y + 14) + 'px';
    };
    cy.on('mouseover', 'node, edge', (ev) => {
      const text = ev.target.data('tip');
      if (!text) return;
      tip.textContent = text;
      place(ev);
      tip.hidden = false;
    });
    cy.on('mousemove', (ev) => { if (!tip.hidden) place(ev); });
    cy.on('mouseout tapstart', 'node, edge', () => { tip.hidden = true; });
    cy.on('viewport', () => { tip.hidden = true; });
    // A large map leaves its overview style once zoomed in past DETAIL_ZOOM, and takes it again when zoomed out.
    this.big = false;
    this.overview = false;
    cy.on('zoom', () => this.updateOverview());
  }

  /** Large maps: the overview style below DETAIL_ZOOM, full detail above (one restyle per crossing). */
  updateOverview() {
    const want = this.big && this.cy.zoom() < DETAIL_ZOOM;
    if (want === this.overview) return;
    this.overview = want;
    const eles = this.cy.edges().union(this.cy.nodes().filter((n) => !n.isParent())); // group boxes keep labels
    this.cy.batch(() => { if (want) eles.addClass('overview'); else eles.removeClass('overview'); });
  }

  /**
   * Draws graph {@code g} (the service-graph answer) with opts {level, hosts, path, percentile, latencyOf, sizeBy,
   * groupBy}: existing elements are updated in place, gone ones removed, new ones added and placed.
   * Returns a promise that resolves once the map is laid out.
   */
  render(g, opts) {
    const cy = this.cy;
    const t0 = performance.now();
    const key = opts.level + '|' + opts.groupBy;
    const oldLevel = this.level, viewChanged = key !== this.key;
    if (viewChanged) this.savePositions();
    // What the previous view had where: seeds for the nodes of another level (a pod where its processes were).
    const before = viewChanged ? cy.nodes().filter((n) => !n.isParent()).map((n) => ({ d: n.data(), p: { ...n.position() } }))
      : [];
    this.key = key;
    this.level = opts.level;
    // A large map starts as an overview (its fit is far out) unless it is one already, zoomed in or not.
    const big = isLarge(g);
    this.overview = big && (this.big ? this.overview : true);
    this.big = big;
    const model = buildElements(g, { ...opts, big, overview: this.overview });
    const saved = this.store.load(key);
    const fresh = [], added = new Set();
    cy.batch(() => {
      const want = new Map(model.elements.map((e) => [e.data.id, e]));
      // A node changing group leaves its old one first: removing a parent would remove its children with it.
      cy.nodes().forEach((n) => {
        const e = want.get(n.id());
        if (e && !n.isParent() && (n.data('parent') || null) !== (e.data.parent || null) && n.parent().nonempty()) {
          n.move({ parent: null });
        }
      });
      cy.elements().filter((x) => !want.has(x.id())).remove();
      for (const e of model.elements) {
        const have = cy.getElementById(e.data.id);
        if (have.empty()) {
          const p = saved.get(e.data.id);
          const node = cy.add({ group: e.group, data: e.data, classes: e.classes,
            position: e.group === 'nodes' && p ? { x: p.x, y: p.y } : undefined });
          if (e.group === 'nodes' && !e.isParent) {
            added.add(e.data.id);
            if (!p) fresh.push(node);
          }
          continue;
        }
        const { id, parent, source, target, ...rest } = e.data; // eslint-disable-line no-unused-vars
        have.data(rest);
        have.classes(e.classes);
        if (e.group === 'nodes' && (have.data('parent') || null) !== (parent || null)) have.move({ parent: parent || null });
      }
    });
    this.summary = model.summary;
    this.applyPlacement();
    // Large maps: straight edges (no per-pair control points) and, while the user pans or zooms, a bitmap of
    // the map instead of a redraw of every element (Cytoscape's textureOnViewport, an init option set live).
    // Large maps: while the user pans or zooms, a bitmap of the map instead of a redraw of every element
    // (Cytoscape's init option textureOnViewport, set live on its renderer; edges are straight there too).
    if (cy.renderer()) cy.renderer().textureOnViewport = model.big;
    // User Timing marks (DevTools' Performance panel, the page benchmark): building vs laying out the map.
    performance.measure('map: elements', { start: t0 });
    const t1 = performance.now();
    this.legend(model);
    const leaves = cy.nodes().filter((n) => !n.isParent());
    let done = Promise.resolve();
    if (viewChanged) {
      // Another level or grouping: its own saved positions where it has them. Ungrouped, the other nodes start
      // where their members (or their group) were in the previous view, then fcose relaxes the map from there.
      let unplaced = fresh.length;
      cy.batch(() => leaves.forEach((n) => {
        if (added.has(n.id())) return; // added at its saved position, or fresh
        const p = saved.get(n.id());
        if (p) n.position({ x: p.x, y: p.y }); else unplaced++;
      }));
      if (opts.groupBy !== 'none' && unplaced) {
        done = this.layout(true); // fcose separates groups well only from scratch
      } else if (before.length && unplaced) {
        // Where a new node's members were (finer to coarser), or the group it was part of (coarser to finer).
        const members = new Map(), byId = new Map(before.map((b) => [b.d.id, b.p]));
        for (const b of before) {
          const g = groupId(b.d, opts.level);
          if (!members.has(g)) members.set(g, []);
          members.get(g).push(b.p);
        }
        placeNear(cy, fresh, (n) => centroid(members.get(n.id())
          || (byId.has(groupId(n.data(), oldLevel)) ? [byId.get(groupId(n.data(), oldLevel))] : [])));
        done = this.layout(false);
      } else if (unplaced > leaves.length / 2) {
        done = this.layout(true);
      } else if (fresh.length) {
        placeNear(cy, fresh);
      }
      done = done.then(() => { this.savePositions(); this.fit(); });
    } else if (fresh.length > leaves.length / 2) {
      done = this.layout(true);
    } else if (fresh.length) {
      placeNear(cy, fresh);
      this.savePositions();
    }
    return done.then(() => {
      if (this.focused) this.focus();
      performance.measure('map: layout and placement', { start: t1 });
    });
  }

  /**
   * Shows placement answer {@code r} on the map ({@code level}: its workloads' level, container or pod): each moved
   * workload's nodes with their host before and after, each edge a move takes off (or puts on) the network with
   * its bytes. Kept across refreshes, and at finer levels than the workloads'; null clears it.
   */
  showPlacement(r, level) {
    this.placement = r ? { r, level } : null;
    this.applyPlacement();
  }

  applyPlacement() {
    const cy = this.cy;
    cy.batch(() => {
      cy.nodes('.moved').removeClass('moved');
      cy.edges('.localised, .delocalised').removeClass('localised delocalised');
      cy.edges().forEach((e) => e.data('note', e.data('hop') || ''));
      if (!this.placement) return;
      const { r, level } = this.placement;
      const moves = new Map((r.moves || []).map((m) => [m.workload, m]));
      const hostAfter = new Map();
      cy.nodes().forEach((n) => {
        if (n.isParent()) return;
        const m = moves.get(n.id()) || moves.get(groupId(n.data(), level));
        if (!m) return;
        hostAfter.set(n.id(), m.to);
        n.data('moveLabel', n.data('label') + '\n' + m.from + ' → ' + m.to);
        n.addClass('moved');
      });
      if (hostAfter.size === 0) return;
      const after = (n) => hostAfter.get(n.id()) || n.data('hostId');
      cy.edges().forEach((e) => {
        const a = e.source(), b = e.target();
        if (!a.data('hostId') || !b.data('hostId') || !(hostAfter.has(a.id()) || hostAfter.has(b.id()))) return;
        const crossBefore = a.data('hostId') !== b.data('hostId'), crossAfter = after(a) !== after(b);
        if (crossBefore === crossAfter) return;
        e.addClass(crossBefore ? 'localised' : 'delocalised');
        const note = (crossBefore ? '−' : '+') + fmtBytes(e.data('bytes')) + ' cross-node';
        e.data('note', [e.data('hop'), note].filter(Boolean).join('\n'));
      });
    });
  }

  /**
   * fcose over the whole map: from scratch ({@code randomize}) or from the current positions. A draft (spectral
   * only, above DRAFT_ABOVE nodes from scratch) runs on a headless copy of ids and links, without style: on the
   * map itself fcose's first step, the bounding box of every element, cost the whole style pass, and moving the
   * nodes one by one fired their events; here the positions arrive in one batch before anything is styled.
   */
  layout(randomize) {
    const cy = this.cy;
    const n = cy.nodes().length;
    const draft = randomize && n > DRAFT_ABOVE;
    const options = { name: 'fcose', randomize, animate: false, fit: false, quality: draft ? 'draft' : 'default',
      packComponents: true, nodeDimensionsIncludeLabels: n <= DRAFT_ABOVE, nodeSeparation: 60, idealEdgeLength: 70,
      nodeRepulsion: 6000, numIter: 2500 };
    const done = () => { this.savePositions(); this.fit(); };
    if (draft) {
      const copy = cytoscape({ headless: true, styleEnabled: false, elements: [
        ...cy.nodes().map((x) => ({ group: 'nodes', data: { id: x.id(), parent: x.data('parent') || undefined } })),
        ...cy.edges().map((e) => ({ group: 'edges', data: { id: e.id(), source: e.data('source'), target: e.data('target') } })),
      ] });
      copy.layout(options).run(); // synchronous without animation
      cy.batch(() => cy.nodes().forEach((x) => { if (!x.isParent()) x.position(copy.getElementById(x.id()).position()); }));
      copy.destroy();
      unstack(cy);
      done();
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const l = cy.layout(options);
      l.one('layoutstop', () => { done(); resolve(); });
      l.run();
    });
  }

  relayout() {
    return this.layout(true);
  }

  savePositions() {
    if (!this.key) return;
    const out = new Map(this.store.load(this.key));
    this.cy.nodes().forEach((n) => { if (!n.isParent()) out.set(n.id(), n.position()); });
    this.store.save(this.key, out);
  }

  /** Selects the elements of {@code keys} (node ids or SOURCE>TARGET) and returns how many were found. */
  select(keys) {
    const cy = this.cy;
    cy.elements().unselect();
    let found = 0;
    for (const k of keys) {
      const e = cy.getElementById(k);
      if (e.nonempty()) { e.select(); found++; }
    }
    if (this.focused) this.focus();
    return found;
  }

  /**
   * The keys at this map's level that stand for a selection made at another: {@code sel} = [{level, node} or
   * {level, edge: {source, target}}] (node data). A node becomes its group, a group its members; an edge the
   * edges between the endpoints' groups or members.
   */
  carry(sel) {
    const lvl = this.level;
    const same = (d, was, level) => groupId(d, level) === was.id || groupId(was, lvl) === d.id;
    const out = [];
    this.cy.elements().forEach((e) => {
      if (e.isNode() && e.isParent()) return;
      const hit = e.isNode() ? sel.some((s) => s.node && same(e.data(), s.node, s.level))
        : sel.some((s) => s.edge && same(e.source().data(), s.edge.source, s.level)
          && same(e.target().data(), s.edge.target, s.level));
      if (hit) out.push(e.id());
    });
    return out;
  }

  /** Marks the nodes whose name, id, pod, namespace, service or host contains {@code q}; returns them. */
  search(q) {
    const cy = this.cy;
    const needle = q.trim().toLowerCase();
    cy.nodes('.match').removeClass('match');
    if (!needle) return [];
    const hits = cy.nodes().filter((n) => !n.isParent() && ['label', 'id', 'pod', 'namespace', 'service', 'hostId',
      'containerId'].some((f) => n.data(f) != null && String(n.data(f)).toLowerCase().includes(needle)));
    hits.addClass('match');
    return hits.map((n) => n.data());
  }

  /** Centres the view on node {@code id} at a readable zoom. */
  reveal(id) {
    const n = this.cy.getElementById(id);
    if (n.empty()) return;
    if (n.hasClass('hidden')) this.unfocus();
    this.cy.zoom({ level: Math.max(this.cy.zoom(), 1.2), renderedPosition: n.renderedPosition() });
    this.cy.center(n);
  }

  /** Shows only the selection, its neighbours and their groups, and fits the view to them. */
  focus() {
    const cy = this.cy;
    const sel = cy.$(':selected');
    if (sel.empty()) return false;
    let keep = sel.union(sel.connectedNodes()).union(sel.nodes().closedNeighborhood());
    keep = keep.union(keep.nodes().ancestors()).union(keep.nodes().edgesWith(keep.nodes()));
    // Each element's class changes once: Cytoscape's visibility cache can miss a change undone in one batch.
    cy.batch(() => {
      keep.removeClass('hidden');
      cy.elements().not(keep).addClass('hidden');
    });
    this.fit(keep);
    this.focused = true;
    return true;
  }

  unfocus() {
    this.focused = false;
    this.cy.elements().removeClass('hidden');
  }

  zoomBy(factor) {
    const cy = this.cy;
    cy.zoom({ level: cy.zoom() * factor, renderedPosition: { x: cy.width() / 2, y: cy.height() / 2 } });
  }

  /** Fits the visible map into view, but no closer than 1.5× (a handful of nodes would fill the screen). */
  fit(eles) {
    const cy = this.cy;
    cy.fit(eles || cy.elements().not('.hidden'), 30); // not ':visible': Cytoscape caches it, sometimes stale
    if (cy.zoom() > 1.5) cy.zoom({ level: 1.5, renderedPosition: { x: cy.width() / 2, y: cy.height() / 2 } });
  }

  legend(model) {
    const legend = $('legend');
    legend.textContent = '';
    for (const [h, c] of model.hostColour) legend.appendChild(el('span', {}, el('i', { style: 'background:' + c }), h));
    legend.appendChild(el('span', {}, el('i', { style: 'background:#fff;border:1px dashed #868e96' }), 'external'));
    legend.appendChild(el('span', { id: 'latencyLegend' }, 'edge colour: ' + model.pct + ' ' + LATENCY_OF[model.of] + ' '
      + (model.lats ? fmt(model.minLat, 1) + ' ms' : ''), el('span', { class: 'bar' }),
    model.lats ? fmt(model.maxLat, 1) + ' ms' : '(none: grey)'));
    legend.appendChild(el('span', {}, 'edge width ∝ √bytes (max ' + fmtBytes(model.maxBytes) + ')'));
    legend.appendChild(el('span', { style: 'color:#c2410c' }, '— critical path'));
  }
}

/** Whether graph {@code g} is drawn simplified: more than LARGE nodes and drawn edges. */
function isLarge(g) {
  let edges = 0;
  for (const e of g.edges) if (e.source !== e.target) edges++;
  return g.nodes.length + edges > LARGE;
}

function centroid(points) {
  if (!points.length) return null;
  let x = 0, y = 0;
  for (const p of points) { x += p.x; y += p.y; }
  return { x: x / points.length, y: y / points.length };
}

/** Cytoscape elements (parents, nodes, edges) for graph {@code g}, and what the legend and summary say. */
function buildElements(g, opts) {
  const nodes = g.nodes;
  const edges = g.edges.filter((e) => e.source !== e.target); // traffic inside a group: not drawn
  const pct = opts.percentile, of = opts.latencyOf, lk = edgeLatencyKey(pct, of);
  const bytesOf = new Map(nodes.map((nd) => [nd.id, 0]));
  for (const e of g.edges) {
    const b = (e.bytesClientToServer || 0) + (e.bytesServerToClient || 0);
    bytesOf.set(e.source, bytesOf.get(e.source) + b);
    bytesOf.set(e.target, bytesOf.get(e.target) + b);
  }
  // Node size: CPU, else power, else bytes (auto picks the first the graph has).
  let sizeBy = opts.sizeBy;
  if (sizeBy === 'auto') {
    sizeBy = nodes.some((nd) => nd.metrics && nd.metrics.cpuUsage != null) ? 'cpu'
      : nodes.some((nd) => nd.metrics && nd.metrics.powerW != null) ? 'power' : 'bytes';
  }
  const sizeValue = (nd) => sizeBy === 'cpu' ? nd.metrics && nd.metrics.cpuUsage
    : sizeBy === 'power' ? nd.metrics && nd.metrics.powerW : bytesOf.get(nd.id);
  let maxSize = 1e-12;
  for (const nd of nodes) maxSize = Math.max(maxSize, sizeValue(nd) || 0);
  let maxBytes = 1, minLat = Infinity, maxLat = -Infinity, lats = 0;
  for (const e of edges) {
    maxBytes = Math.max(maxBytes, e.bytesClientToServer + e.bytesServerToClient);
    if (e[lk] != null) { lats++; minLat = Math.min(minLat, e[lk]); maxLat = Math.max(maxLat, e[lk]); }
  }
  const hostColour = new Map();
  opts.hosts.forEach((h, i) => hostColour.set(h, PALETTE[i % PALETTE.length]));
  for (const nd of nodes) {
    if (nd.hostId && !hostColour.has(nd.hostId)) hostColour.set(nd.hostId, PALETTE[hostColour.size % PALETTE.length]);
  }
  const cp = opts.path && opts.path.path ? opts.path.path : [];
  const cpEdges = new Map(); // edge id -> its latency on the path (ms)
  for (let i = 0; i + 1 < cp.length; i++) cpEdges.set(cp[i] + '>' + cp[i + 1], (opts.path.edgeLatenciesMs || [])[i]);
  const cpNodes = new Set(cp);
  const groupBy = opts.groupBy === opts.level ? 'none' : opts.groupBy;
  const groupKey = groupBy === 'host' ? 'hostId' : groupBy === 'namespace' ? 'namespace' : null;

  // Radius from 6 to 24 px; smaller on a crowded map, where a draft layout puts nodes closer than that.
  const [r0, dr] = nodes.length > 300 ? [3, 7] : [6, 18];
  const elements = [];
  const parents = new Set();
  for (const nd of nodes) {
    const v = sizeValue(nd);
    const m = nd.metrics || {};
    const ext = nd.kind === 'external';
    const label = nd.name && nd.name !== nd.id ? nd.name : nd.id;
    const parent = groupKey && nd[groupKey] ? 'group:' + groupBy + ':' + nd[groupKey] : null;
    if (parent && !parents.has(parent)) {
      parents.add(parent);
      elements.push({ group: 'nodes', isParent: true, classes: 'group',
        data: { id: parent, label: groupBy + ' ' + nd[groupKey], kind: 'group' } });
    }
    const tip = [nd.id, nd.kind + (nd.hostId ? ' on ' + nd.hostId : '') + (nd.namespace ? ', ns ' + nd.namespace : ''),
      m.cpuUsage != null ? 'CPU ' + fmt(m.cpuUsage) + ' cores' : null, m.powerW != null ? 'power ' + fmt(m.powerW) + ' W' : null,
      'traffic ' + fmtBytes(bytesOf.get(nd.id))].filter(Boolean).join('\n');
    elements.push({ group: 'nodes', classes: [ext ? 'external' : '', cpNodes.has(nd.id) ? 'critical' : '',
      nodes.length > 300 ? 'crowded' : '', opts.overview ? 'overview' : ''].join(' ').trim(),
      data: { id: nd.id, label: label.length > 28 ? label.slice(0, 27) + '…' : label, kind: nd.kind, name: nd.name,
        hostId: nd.hostId, namespace: nd.namespace, pod: nd.pod, service: nd.service, containerId: nd.containerId,
        members: nd.members, parent, size: 2 * (v == null ? r0 : r0 + dr * Math.sqrt(Math.max(0, v) / maxSize)),
        colour: ext ? '#fff' : hostColour.get(nd.hostId) || '#868e96', bytes: bytesOf.get(nd.id), tip } });
  }
  const big = opts.big;
  const edgeClass = (big ? ' straight' : '') + (opts.overview ? ' overview' : '');
  for (const e of edges) {
    const bytes = e.bytesClientToServer + e.bytesServerToClient;
    const lat = e[lk];
    const colour = lat == null ? GREY : latencyColour(maxLat > minLat ? (lat - minLat) / (maxLat - minLat) : 0.5);
    const id = e.source + '>' + e.target;
    elements.push({ group: 'edges', classes: ((cpEdges.has(id) ? 'critical' : '') + edgeClass).trim(),
      data: { id, source: e.source, target: e.target, bytes, width: 1 + 9 * Math.sqrt(bytes / maxBytes), colour,
        latency: lat == null ? null : lat, latencyOf: of,
        hop: cpEdges.has(id) && cpEdges.get(id) != null ? fmt(cpEdges.get(id)) + ' ms' : '',
        tip: e.source + ' → ' + e.target + '\n' + fmtBytes(e.bytesClientToServer) + ' c→s, '
          + fmtBytes(e.bytesServerToClient) + ' s→c' + (e.requestRate != null ? '\n' + fmt(e.requestRate, 1) + ' req/s' : '')
          + (lat != null ? '\n' + pct + ' ' + LATENCY_OF[of] + ' ' + fmt(lat) + ' ms' : '') } });
  }
  return { elements, hostColour, pct, of, lats, minLat, maxLat, maxBytes, big,
    summary: { nodes: nodes.length, edges: g.edges.length, sizeBy } };
}
