/*
 * Wattgraph service map: plain JavaScript and SVG, no external resources. Reads /api/v1/service-graph,
 * /api/v1/projections/host, /api/v1/analysis/critical-path, /api/v1/hosts and /api/v1/power/budgets/current
 * (the budget loop's published budgets); posts /api/v1/placement and /api/v1/power/budgets. A bearer token typed into the page
 * (or given once as #token=...) is sent with every call (kept in sessionStorage).
 * Every value from the API is inserted as text (textContent / attributes), never as HTML.
 */
(function () {
  'use strict';
  const SVG = 'http://www.w3.org/2000/svg';
  const $ = (id) => document.getElementById(id);
  const PALETTE = ['#4263eb', '#0ca678', '#ae3ec9', '#f59f00', '#1098ad', '#e64980', '#74b816', '#7048e8',
    '#fd7e14', '#15aabf'];
  const state = { graph: null, path: null, hosts: [], timer: null, detail: null };

  function el(tag, attrs, ...children) {
    const svg = ['svg', 'g', 'circle', 'line', 'path', 'rect', 'text', 'title', 'defs', 'marker', 'polygon']
      .includes(tag);
    const e = svg ? document.createElementNS(SVG, tag) : document.createElement(tag);
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

  function fmtBytes(b) {
    if (b === null || b === undefined) return '–';
    const u = ['B', 'kB', 'MB', 'GB', 'TB'];
    let i = 0;
    while (Math.abs(b) >= 1000 && i < u.length - 1) { b /= 1000; i++; }
    return (i === 0 ? b.toFixed(0) : b.toFixed(b < 10 ? 2 : 1)) + ' ' + u[i];
  }
  const fmt = (x, d = 2) => (x === null || x === undefined || Number.isNaN(x) ? '–' : Number(x).toFixed(d));

  function status(msg, error) {
    const s = $('status');
    s.textContent = msg || '';
    s.className = error ? 'error' : '';
  }

  async function api(path, body) {
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

  function filters(extra) {
    const p = new URLSearchParams();
    if ($('host').value) p.set('host', $('host').value);
    if ($('namespace').value) p.set('namespace', $('namespace').value);
    for (const [k, v] of Object.entries(extra || {})) if (v) p.set(k, v);
    const s = p.toString();
    return s ? '?' + s : '';
  }

  // ---------------------------------------------------------------- service map

  // Edge latency shown: client round trip (latency*Ms: the stream job's clientRtt*Ns) or server time (serverTime*Ms).
  const pctSuffix = (p) => (p === 'avg' ? 'Avg' : p.toUpperCase()) + 'Ms';
  const latencyKey = (p) => 'latency' + pctSuffix(p);
  const edgeLatencyKey = (p, of) => (of === 'server' ? 'serverTime' : 'latency') + pctSuffix(p);
  const LATENCY_OF = { client: 'client RTT', server: 'server time' };
  const PCTS = ['avg', 'p50', 'p75', 'p90', 'p99'];

  /** Deterministic force-directed layout (Fruchterman-Reingold), nodes of a host pulled together. */
  function layout(nodes, edges, w, h) {
    const n = nodes.length;
    const pos = nodes.map((_, i) => {
      const a = (2 * Math.PI * i) / Math.max(1, n);
      return { x: w / 2 + (w / 3) * Math.cos(a), y: h / 2 + (h / 3) * Math.sin(a), dx: 0, dy: 0 };
    });
    if (n <= 1) { if (n === 1) { pos[0].x = w / 2; pos[0].y = h / 2; } return pos; }
    if (n > 1500) {
      // Too many for an O(n²) force layout in the browser: a grid, ordered by host then id.
      const order = nodes.map((nd, i) => i).sort((a, b) => ((nodes[a].hostId || '~') + nodes[a].id)
        .localeCompare((nodes[b].hostId || '~') + nodes[b].id));
      const cols = Math.ceil(Math.sqrt((n * w) / h));
      const rows = Math.ceil(n / cols);
      order.forEach((i, k) => {
        pos[i].x = 20 + ((k % cols) + 0.5) * ((w - 40) / cols);
        pos[i].y = 20 + (Math.floor(k / cols) + 0.5) * ((h - 40) / rows);
      });
      return pos;
    }
    const index = new Map(nodes.map((nd, i) => [nd.id, i]));
    const links = edges.map((e) => [index.get(e.source), index.get(e.target)]).filter(([a, b]) => a !== b);
    const k = Math.sqrt((w * h) / n) * 0.75;
    const iterations = n > 600 ? 30 : n > 200 ? 120 : 300;
    let temp = w / 8;
    const groups = new Map();
    nodes.forEach((nd, i) => {
      const g = nd.hostId || (nd.kind === 'external' ? '~external' : '~');
      if (!groups.has(g)) groups.set(g, []);
      groups.get(g).push(i);
    });
    for (let it = 0; it < iterations; it++) {
      for (const p of pos) { p.dx = 0; p.dy = 0; }
      for (let i = 0; i < n; i++) {
        for (let j = i + 1; j < n; j++) {
          let dx = pos[i].x - pos[j].x, dy = pos[i].y - pos[j].y;
          let d2 = dx * dx + dy * dy;
          if (d2 < 0.01) { dx = 0.1 * ((i * 7 + j) % 3 - 1) + 0.05; dy = 0.1; d2 = dx * dx + dy * dy; }
          const f = (k * k) / d2;
          pos[i].dx += dx * f; pos[i].dy += dy * f; pos[j].dx -= dx * f; pos[j].dy -= dy * f;
        }
      }
      for (const [a, b] of links) {
        const dx = pos[a].x - pos[b].x, dy = pos[a].y - pos[b].y;
        const d = Math.sqrt(dx * dx + dy * dy) || 0.01;
        const f = d / k;
        pos[a].dx -= dx * f; pos[a].dy -= dy * f; pos[b].dx += dx * f; pos[b].dy += dy * f;
      }
      for (const members of groups.values()) {
        if (members.length < 2) continue;
        let cx = 0, cy = 0;
        for (const i of members) { cx += pos[i].x; cy += pos[i].y; }
        cx /= members.length; cy /= members.length;
        for (const i of members) { pos[i].dx += (cx - pos[i].x) * 0.6; pos[i].dy += (cy - pos[i].y) * 0.6; }
      }
      for (const p of pos) {
        p.dx += (w / 2 - p.x) * 0.02; p.dy += (h / 2 - p.y) * 0.02; // gravity
        const d = Math.sqrt(p.dx * p.dx + p.dy * p.dy) || 1;
        p.x += (p.dx / d) * Math.min(d, temp);
        p.y += (p.dy / d) * Math.min(d, temp);
      }
      temp = Math.max(1, temp * 0.97);
    }
    // Fit into the box with a margin.
    const pad = 60;
    const xs = pos.map((p) => p.x), ys = pos.map((p) => p.y);
    const minX = Math.min(...xs), maxX = Math.max(...xs), minY = Math.min(...ys), maxY = Math.max(...ys);
    const sx = (w - 2 * pad) / Math.max(1, maxX - minX), sy = (h - 2 * pad) / Math.max(1, maxY - minY);
    for (const p of pos) {
      p.x = pad + (maxX === minX ? (w - 2 * pad) / 2 : (p.x - minX) * sx);
      p.y = pad + (maxY === minY ? (h - 2 * pad) / 2 : (p.y - minY) * sy);
    }
    return pos;
  }

  function latencyColour(t) { // 0 → green, 0.5 → orange, 1 → red
    const stops = [[43, 138, 62], [240, 140, 0], [201, 42, 42]];
    const x = Math.max(0, Math.min(1, t)) * 2;
    const i = Math.min(1, Math.floor(x));
    const f = x - i;
    const c = stops[i].map((v, j) => Math.round(v + (stops[i + 1][j] - v) * f));
    return 'rgb(' + c.join(',') + ')';
  }

  function drawMap() {
    const svg = $('map');
    const g = state.graph;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    if (!g) return;
    const W = 900, H = 430;
    const nodes = g.nodes, edges = g.edges.filter((e) => e.source !== e.target);
    const pct = $('percentile').value, of = $('latencyOf').value, lk = edgeLatencyKey(pct, of);
    // Node size: CPU, else power, else bytes (auto picks the first the graph has).
    const bytesOf = new Map(nodes.map((nd) => [nd.id, 0]));
    for (const e of g.edges) {
      const b = (e.bytesClientToServer || 0) + (e.bytesServerToClient || 0);
      bytesOf.set(e.source, bytesOf.get(e.source) + b);
      bytesOf.set(e.target, bytesOf.get(e.target) + b);
    }
    let sizeBy = $('sizeBy').value;
    if (sizeBy === 'auto') {
      sizeBy = nodes.some((nd) => nd.metrics && nd.metrics.cpuUsage != null) ? 'cpu'
        : nodes.some((nd) => nd.metrics && nd.metrics.powerW != null) ? 'power' : 'bytes';
    }
    const sizeValue = (nd) => sizeBy === 'cpu' ? nd.metrics && nd.metrics.cpuUsage
      : sizeBy === 'power' ? nd.metrics && nd.metrics.powerW : bytesOf.get(nd.id);
    const maxSize = Math.max(1e-12, ...nodes.map((nd) => sizeValue(nd) || 0));
    const radius = (nd) => {
      const v = sizeValue(nd);
      return v == null ? 6 : 6 + 18 * Math.sqrt(Math.max(0, v) / maxSize);
    };
    const maxBytes = Math.max(1, ...edges.map((e) => e.bytesClientToServer + e.bytesServerToClient));
    const lats = edges.map((e) => e[lk]).filter((x) => x != null);
    const minLat = lats.length ? Math.min(...lats) : 0, maxLat = lats.length ? Math.max(...lats) : 0;
    const hostColour = new Map();
    state.hosts.forEach((h, i) => hostColour.set(h, PALETTE[i % PALETTE.length]));
    for (const nd of nodes) {
      if (nd.hostId && !hostColour.has(nd.hostId)) hostColour.set(nd.hostId, PALETTE[hostColour.size % PALETTE.length]);
    }
    const pos = layout(nodes, edges, W, H);
    const at = new Map(nodes.map((nd, i) => [nd.id, pos[i]]));
    const rOf = new Map(nodes.map((nd) => [nd.id, radius(nd)]));
    // Critical path membership.
    const cp = state.path && state.path.path ? state.path.path : [];
    const cpEdges = new Set();
    for (let i = 0; i + 1 < cp.length; i++) cpEdges.add(cp[i] + '\u0000' + cp[i + 1]);
    const cpNodes = new Set(cp);

    const defs = el('defs', {});
    for (const [id, colour] of [['arrow', '#8a96a3'], ['arrowCp', '#e8590c']]) {
      defs.appendChild(el('marker', { id, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 11, markerHeight: 11, markerUnits: 'userSpaceOnUse',
        orient: 'auto-start-reverse' }, el('path', { d: 'M0,0 L10,5 L0,10 z', fill: colour })));
    }
    svg.appendChild(defs);
    const edgeLayer = el('g', { class: 'edges' });
    const pairs = new Set(edges.map((e) => e.source + '\u0000' + e.target));
    for (const e of edges) {
      const a = at.get(e.source), b = at.get(e.target);
      const bytes = e.bytesClientToServer + e.bytesServerToClient;
      const width = 1 + 9 * Math.sqrt(bytes / maxBytes);
      const lat = e[lk];
      const colour = lat == null ? '#aab4bf' : latencyColour(maxLat > minLat ? (lat - minLat) / (maxLat - minLat) : 0.5);
      const onPath = cpEdges.has(e.source + '\u0000' + e.target);
      // Curve when both directions exist; stop at the target's circle.
      const dx = b.x - a.x, dy = b.y - a.y, d = Math.sqrt(dx * dx + dy * dy) || 1;
      const bend = pairs.has(e.target + '\u0000' + e.source) ? 0.15 : 0.06;
      const mx = (a.x + b.x) / 2 - dy * bend, my = (a.y + b.y) / 2 + dx * bend;
      const tr = rOf.get(e.target) + 3;
      const vx = b.x - mx, vy = b.y - my, vd = Math.sqrt(vx * vx + vy * vy) || 1;
      const ex = b.x - (vx / vd) * tr, ey = b.y - (vy / vd) * tr;
      const dPath = 'M' + a.x.toFixed(1) + ',' + a.y.toFixed(1) + ' Q' + mx.toFixed(1) + ',' + my.toFixed(1) + ' '
        + ex.toFixed(1) + ',' + ey.toFixed(1);
      const g1 = el('g', { class: 'edge' + (onPath ? ' critical' : ''), 'data-edge-source': e.source,
        'data-edge-target': e.target, 'data-bytes': bytes, 'data-latency-ms': lat, 'data-latency-of': of,
        'data-colour': colour });
      g1.addEventListener('click', () => showDetail(e.source + '>' + e.target));
      if (onPath) { // an orange halo, so the edge itself keeps its latency colour
        g1.appendChild(el('path', { d: dPath, fill: 'none', stroke: '#e8590c', 'stroke-opacity': 0.5,
          'stroke-width': width + 8, 'stroke-linecap': 'round' }));
      }
      g1.appendChild(el('path', { d: dPath, fill: 'none', stroke: colour,
        'stroke-width': width, 'stroke-opacity': 0.85, 'marker-end': onPath ? 'url(#arrowCp)' : 'url(#arrow)' },
      el('title', { text: e.source + ' → ' + e.target + '\n' + fmtBytes(e.bytesClientToServer) + ' c→s, '
        + fmtBytes(e.bytesServerToClient) + ' s→c' + (e.requestRate != null ? '\n' + fmt(e.requestRate, 1) + ' req/s' : '')
        + (lat != null ? '\n' + pct + ' ' + LATENCY_OF[of] + ' ' + fmt(lat) + ' ms' : '') })));
      edgeLayer.appendChild(g1);
    }
    svg.appendChild(edgeLayer);
    const nodeLayer = el('g', { class: 'nodes' });
    for (const nd of nodes) {
      const p = at.get(nd.id), r = rOf.get(nd.id), ext = nd.kind === 'external';
      const m = nd.metrics || {};
      const tip = [nd.id, nd.kind + (nd.hostId ? ' on ' + nd.hostId : '') + (nd.namespace ? ', ns ' + nd.namespace : ''),
        m.cpuUsage != null ? 'CPU ' + fmt(m.cpuUsage) + ' cores' : null, m.powerW != null ? 'power ' + fmt(m.powerW) + ' W' : null,
        'traffic ' + fmtBytes(bytesOf.get(nd.id))].filter(Boolean).join('\n');
      const gN = el('g', { class: 'node' + (cpNodes.has(nd.id) ? ' critical' : ''), 'data-node-id': nd.id,
        'data-kind': nd.kind, transform: 'translate(' + p.x.toFixed(1) + ',' + p.y.toFixed(1) + ')' });
      gN.addEventListener('click', () => showDetail(nd.id));
      gN.appendChild(el('circle', { r: r.toFixed(1), fill: ext ? '#fff' : hostColour.get(nd.hostId) || '#868e96',
        'fill-opacity': ext ? 1 : 0.85, stroke: cpNodes.has(nd.id) ? '#e8590c' : ext ? '#868e96' : '#fff',
        'stroke-width': cpNodes.has(nd.id) ? 4 : 1.5, 'stroke-dasharray': ext ? '3,2' : null },
      el('title', { text: tip })));
      const label = nd.name && nd.name !== nd.id ? nd.name : nd.id;
      gN.appendChild(el('text', { class: 'node-label', x: 0, y: r + 12, 'text-anchor': 'middle',
        text: label.length > 28 ? label.slice(0, 27) + '…' : label }));
      nodeLayer.appendChild(gN);
    }
    svg.appendChild(nodeLayer);
    $('mapSummary').textContent = nodes.length + ' nodes, ' + g.edges.length + ' edges at ' + $('level').value
      + ' level; size = ' + sizeBy;
    const legend = $('legend');
    legend.textContent = '';
    for (const [h, c] of hostColour) legend.appendChild(el('span', {}, el('i', { style: 'background:' + c }), h));
    legend.appendChild(el('span', {}, el('i', { style: 'background:#fff;border:1px dashed #868e96' }), 'external'));
    legend.appendChild(el('span', { id: 'latencyLegend' }, 'edge colour: ' + pct + ' ' + LATENCY_OF[of] + ' '
      + (lats.length ? fmt(minLat, 1) + ' ms' : ''),
      el('span', { class: 'bar' }), lats.length ? fmt(maxLat, 1) + ' ms' : '(none: grey)'));
    legend.appendChild(el('span', {}, 'edge width ∝ √bytes (max ' + fmtBytes(maxBytes) + ')'));
    legend.appendChild(el('span', { style: 'color:#e8590c' }, '— critical path'));
  }

  /** The selected node's or edge's ('SOURCE>TARGET') properties, latencies per percentile included. */
  function showDetail(key) {
    state.detail = key;
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
      rows.push(['bytes c→s / s→c', fmtBytes(edge.bytesClientToServer) + ' / ' + fmtBytes(edge.bytesServerToClient)]);
      rows.push(['requests', edge.requestRate == null ? '–' : fmt(edge.requestRate, 1) + ' /s']);
      for (const p of PCTS) {
        rows.push([p + ' client RTT', ms(edge[latencyKey(p)]), 'client-' + p]);
        rows.push([p + ' server time', ms(edge['serverTime' + pctSuffix(p)]), 'server-' + p]);
      }
      rows.push(['network time (mean RTT − server)', ms(edge.networkTimeMs), 'network']);
    } else {
      const m = node.metrics || {};
      box.appendChild(el('h3', { text: node.name && node.name !== node.id ? node.name + ' (' + node.id + ')' : node.id }));
      rows.push(['kind', node.kind + (node.hostId ? ' on ' + node.hostId : '')]);
      rows.push(['requests served', m.requestRate == null ? '–' : fmt(m.requestRate, 1) + ' /s', 'requests']);
      rows.push(['utilisation (Eq. 3.3)', m.utilization == null ? '–' : fmt(100 * m.utilization, 1) + ' %', 'utilization']);
      rows.push(['CPU', m.cpuUsage == null ? '–' : fmt(m.cpuUsage) + ' cores']);
      rows.push(['power', m.powerW == null ? '–' : fmt(m.powerW) + ' W']);
      for (const p of PCTS) rows.push([p + ' server time', ms(m[latencyKey(p)]), 'server-' + p]);
    }
    const t = el('table', { id: 'detailTable', 'data-detail': key });
    for (const [k, v, attr] of rows) {
      t.appendChild(el('tr', { 'data-row': attr || null }, el('th', { text: k }), el('td', { class: 'num', text: v })));
    }
    box.appendChild(t);
  }

  // ---------------------------------------------------------------- heat-map

  function drawHeatmap(m) {
    const svg = $('heatmap');
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const n = m.labels.length;
    $('heatSummary').textContent = 'total ' + fmtBytes(m.totalBytes) + ', row = sender';
    if (n === 0) { svg.appendChild(el('text', { x: 10, y: 20, text: 'no traffic' })); return; }
    const labelW = Math.min(120, 10 + 7 * Math.max(...m.labels.map((l) => l.length)));
    const box = svg.clientWidth || 420;
    const cell = Math.max(14, Math.min(70, Math.floor((box - labelW - 10) / n)));
    const height = labelW + cell * n + 10;
    svg.setAttribute('height', height);
    svg.setAttribute('viewBox', '0 0 ' + box + ' ' + height);
    let max = 1;
    for (const row of m.bytes) for (const v of row) max = Math.max(max, v);
    const top = labelW;
    m.labels.forEach((l, i) => {
      const short = l.length > 16 ? l.slice(0, 15) + '…' : l;
      svg.appendChild(el('text', { x: labelW - 6, y: top + i * cell + cell / 2 + 4, 'text-anchor': 'end',
        'font-size': 11, text: short }));
      const x = labelW + i * cell + cell / 2;
      svg.appendChild(el('text', { x, y: top - 6, 'font-size': 11, transform: 'rotate(-45 ' + x + ' ' + (top - 6) + ')',
        text: short }));
    });
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        const v = m.bytes[i][j];
        const t = v > 0 ? Math.log1p(v) / Math.log1p(max) : 0;
        const fill = v > 0 ? 'rgba(232,89,12,' + (0.12 + 0.88 * t).toFixed(3) + ')' : '#f1f3f5';
        const g1 = el('g', { class: 'heat-cell', 'data-from': m.labels[i], 'data-to': m.labels[j], 'data-bytes': v });
        g1.appendChild(el('rect', { x: labelW + j * cell, y: top + i * cell, width: cell - 2, height: cell - 2, rx: 2,
          fill }, el('title', { text: m.labels[i] + ' → ' + m.labels[j] + ': ' + fmtBytes(v) })));
        if (cell >= 40 && v > 0) {
          g1.appendChild(el('text', { x: labelW + j * cell + (cell - 2) / 2, y: top + i * cell + cell / 2 + 3,
            'text-anchor': 'middle', 'font-size': 10, fill: t > 0.6 ? '#fff' : '#1d2733', text: fmtBytes(v) }));
        }
        svg.appendChild(g1);
      }
    }
  }

  function drawCritical(cp) {
    const box = $('critical');
    box.textContent = '';
    if (!cp || !cp.path || cp.path.length === 0) {
      box.appendChild(el('div', { class: 'meta', text: 'No path: no internal edge carries ' + $('percentile').value
        + ' latency at this level.' }));
      return;
    }
    box.appendChild(el('div', { class: 'meta', text: cp.mode + ' path over ' + cp.percentile + ': total '
      + fmt(cp.totalLatencyMs) + ' ms, width ' + fmt(cp.widthMs) + ' ms' }));
    const ol = el('ol', { id: 'criticalPath' });
    cp.path.forEach((id, i) => ol.appendChild(el('li', { 'data-path-node': id }, id,
      i < cp.edgeLatenciesMs.length ? el('span', { class: 'meta', text: '  → ' + fmt(cp.edgeLatenciesMs[i]) + ' ms' }) : null)));
    box.appendChild(ol);
  }

  // ---------------------------------------------------------------- data loading

  async function loadHosts() {
    try {
      const h = await api('/api/v1/hosts');
      state.hosts = h.hosts.map((x) => x.id);
      const sel = $('host'), keep = sel.value;
      while (sel.options.length > 1) sel.remove(1);
      for (const id of state.hosts) sel.appendChild(el('option', { value: id, text: id }));
      sel.value = state.hosts.includes(keep) ? keep : '';
      if (!$('powerHosts').value.trim()) {
        $('powerHosts').value = JSON.stringify(state.hosts.map((id) => ({ host: id, currentPowerW: 60,
          actionablePowerW: 30, idlePowerW: 20, minW: 20, maxW: 120 })), null, 1);
      }
    } catch (e) {
      status(e.message + (e.status === 401 ? ' — type a bearer token above' : ''), true);
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

  async function refresh() {
    status('loading…');
    try {
      if (state.hosts.length === 0) await loadHosts();
      const level = $('level').value;
      const [graph, matrix] = await Promise.all([
        api('/api/v1/service-graph' + filters({ level })),
        api('/api/v1/projections/host' + filters()),
      ]);
      let cp = null;
      try {
        cp = await api('/api/v1/analysis/critical-path' + filters({ level, percentile: $('percentile').value,
          mode: $('mode').value }));
      } catch (e) { cp = null; }
      state.graph = graph;
      state.path = cp;
      updateNamespaces(graph);
      drawMap();
      showDetail(state.detail);
      drawHeatmap(matrix);
      drawCritical(cp);
      await httpRoutes();
      await budgetLoop();
      status('updated ' + new Date().toLocaleTimeString());
      document.body.setAttribute('data-loaded', 'true');
    } catch (e) {
      if (!$('status').classList.contains('error')) status(e.message, true);
    }
  }

  // ---------------------------------------------------------------- panels

  function table(headers, rows) {
    const t = el('table', {}, el('tr', {}, ...headers.map((h) => el('th', { text: h }))));
    for (const r of rows) {
      t.appendChild(el('tr', {}, ...r.map((c) => typeof c === 'number' ? el('td', { class: 'num', text: fmt(c) })
        : el('td', { text: c == null ? '–' : String(c) }))));
    }
    return t;
  }

  async function placement(ev) {
    if (ev) ev.preventDefault();
    const out = $('placementResult');
    out.textContent = 'computing…';
    const body = { method: $('placementMethod').value, level: $('level').value === 'pod' ? 'pod' : 'container' };
    if ($('namespace').value) body.namespace = $('namespace').value;
    if ($('nodeWeight').value) body.nodeWeight = Number($('nodeWeight').value);
    try {
      const r = await api('/api/v1/placement', body);
      out.textContent = '';
      out.appendChild(el('div', {},
        el('span', { class: 'kpi' }, 'cross-node ', el('b', { text: fmtBytes(r.crossNodeBytesBefore) }), ' → ',
          el('b', { text: fmtBytes(r.crossNodeBytesAfter) })),
        el('span', { class: 'kpi' }, 'nodes ', el('b', { text: r.nodesUsedBefore == null ? '–' : r.nodesUsedBefore }),
          ' → ', el('b', { text: r.nodesUsedAfter })),
        el('span', { class: 'kpi' }, 'method ', el('b', { text: r.method }), r.feasible ? '' : ' (infeasible!)')));
      out.appendChild(el('div', { class: 'meta', text: (r.moves || []).length + ' moves' }));
      if (r.moves && r.moves.length) {
        const t = table(['workload', 'from', 'to'], r.moves.map((m) => [m.workload, m.from, m.to]));
        t.id = 'placementMoves';
        out.appendChild(t);
      }
      if (r.loads && r.loads.length) {
        out.appendChild(table(['node', 'CPU', 'of', 'workloads'],
          r.loads.map((l) => [l.node, l.cpu, l.cpuCapacity, String(l.workloads)])));
      }
      for (const p of r.patches || []) {
        out.appendChild(el('div', { class: 'meta', text: 'patch for ' + p.workload + ' → ' + p.node }));
        out.appendChild(el('pre', { class: 'patch', text: p.kubectl + '\n' + JSON.stringify(p.nodeSelectorPatch) }));
      }
    } catch (e) {
      out.textContent = e.message;
    }
  }

  async function power(ev) {
    if (ev) ev.preventDefault();
    const out = $('powerResult');
    out.textContent = 'computing…';
    let hosts;
    try { hosts = JSON.parse($('powerHosts').value || '[]'); } catch (e) {
      out.textContent = 'hosts: not valid JSON (' + e.message + ')';
      return;
    }
    const body = { policy: $('powerPolicy').value, hosts };
    if (body.policy === 'presto') {
      body.slaMs = Number($('slaMs').value);
      body.level = $('level').value === 'container' ? 'container' : 'pod';
      if ($('entryPoint').value.trim()) body.entryPoint = $('entryPoint').value.trim();
    }
    if ($('namespace').value) body.namespace = $('namespace').value;
    try {
      const r = await api('/api/v1/power/budgets', body);
      out.textContent = '';
      if (r.latencyMs !== undefined) {
        out.appendChild(el('div', { class: 'meta', text: 'entry ' + r.entryPoint + ': latency ' + fmt(r.latencyMs)
          + ' ms vs SLA ' + fmt(r.slaMs) + ' ms, e_l ' + fmt(r.latencyError, 3) + (r.slaEscape ? ' — SLA escape' : '') }));
      }
      const t = table(['host', 'previous W', 'budget W', 'reason'],
        r.budgets.map((b) => [b.host, b.previousW == null ? '–' : b.previousW, b.budgetW, b.reason]));
      t.id = 'powerBudgets';
      out.appendChild(t);
      for (const w of r.warnings || []) out.appendChild(el('div', { class: 'meta', text: '⚠ ' + w }));
    } catch (e) {
      out.textContent = e.message;
    }
  }

  // ---------------------------------------------------------------- HTTP routes (served, slowest p99 first)

  async function httpRoutes() {
    const out = $('routesResult');
    const p = new URLSearchParams({ role: 'server', sort: 'p99', limit: '15' });
    if ($('host').value) p.set('host', $('host').value);
    let rows;
    try {
      rows = await api('/api/v1/http-routes?' + p.toString());
    } catch (e) {
      out.textContent = '';
      out.appendChild(el('div', { class: 'error', text: e.message }));
      return;
    }
    out.textContent = '';
    $('routesSummary').textContent = 'served, per process, latest window';
    if (rows.length === 0) {
      out.appendChild(el('div', { class: 'off', text: 'No HTTP/1.x route seen (plain-text requests only).' }));
      return;
    }
    const name = (id) => {
      const nd = state.graph && state.graph.nodes.find((n) => n.id === id);
      return nd && nd.name && nd.name !== id ? nd.name + ' (' + id + ')' : id;
    };
    const t = table(['process', 'route', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms'],
      rows.map((r) => [name(r.entityId), r.method + ' ' + r.path + (r.pathTruncated ? '…' : ''), r.requestRate,
        r.p50Ms, r.p90Ms, r.p99Ms]));
    t.id = 'routesTable';
    out.appendChild(t);
  }

  // ---------------------------------------------------------------- published budgets (the budget loop)

  /** Age of a Unix-ns instant, e.g. "4 s", "3 min" (ns beyond 2^53 lose sub-µs precision: irrelevant here). */
  function age(ns) {
    if (ns == null) return '–';
    const s = Math.max(0, (Date.now() - ns / 1e6) / 1000);
    return s < 120 ? s.toFixed(0) + ' s' : s < 7200 ? (s / 60).toFixed(0) + ' min' : (s / 3600).toFixed(1) + ' h';
  }

  async function budgetLoop() {
    const out = $('loopResult');
    let st;
    try {
      st = await api('/api/v1/power/budgets/current');
    } catch (e) {
      out.textContent = '';
      out.appendChild(el('div', { class: 'error', text: e.message }));
      return;
    }
    out.textContent = '';
    if (!st.enabled) {
      $('loopSummary').textContent = 'loop off';
      out.appendChild(el('div', { id: 'budgetLoopOff', class: 'off', text: 'The budget loop is off '
        + '(wattgraph.power.budgets.enabled=false): no budgets are published to the agents. '
        + 'The panel above computes budgets on request only.' }));
      return;
    }
    $('loopSummary').textContent = st.policy + ' every ' + fmt((st.periodMs || 0) / 1000, 0) + ' s to ' + st.topic;
    out.appendChild(el('div', { class: 'meta', text: 'last cycle ' + age(st.lastCycleAtNs) + ' ago'
      + (st.manual && Object.keys(st.manual).length ? '; MANUAL on ' + Object.keys(st.manual).sort().join(', ') : '') }));
    if (st.lastError) {
      out.appendChild(el('div', { id: 'budgetLoopError', class: 'error', text: 'last error (' + age(st.lastErrorAtNs)
        + ' ago): ' + st.lastError }));
    }
    const budgets = (st.budgets || []).slice().sort((a, b) => a.hostId.localeCompare(b.hostId));
    if (budgets.length === 0) {
      out.appendChild(el('div', { class: 'off', text: 'No budget published yet.' }));
      return;
    }
    const now = Date.now() * 1e6;
    const t = el('table', { id: 'loopBudgets' }, el('tr', {}, ...['host', 'budget W', 'bounds W', 'policy', 'previous W',
      'reason', 'age'].map((h) => el('th', { text: h }))));
    for (const b of budgets) {
      const expired = b.validUntilNs != null && now > b.validUntilNs;
      t.appendChild(el('tr', { class: expired ? 'stale' : null, 'data-budget-host': b.hostId,
        'data-budget-watts': b.budgetWatts, 'data-budget-policy': b.policy },
      el('td', { text: b.hostId }),
      el('td', { class: 'num', text: fmt(b.budgetWatts) }),
      el('td', { class: 'num', 'data-bounds': fmt(b.minWatts) + '–' + fmt(b.maxWatts),
        text: fmt(b.minWatts) + '–' + fmt(b.maxWatts) }),
      el('td', { text: b.policy }),
      el('td', { class: 'num', text: b.previousWatts == null ? '–' : fmt(b.previousWatts) }),
      el('td', { text: b.reason || '' }),
      el('td', { class: 'num', text: age(b.computedAtNs) + (expired ? ' (expired)' : '') })));
    }
    out.appendChild(t);
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
    for (const k of ['level', 'percentile', 'latencyOf', 'mode', 'sizeBy']) if (params.get(k)) $(k).value = params.get(k);
    state.detail = params.get('detail'); // a node id or SOURCE>TARGET: opens its detail (used by the browser test)
    $('token').addEventListener('change', () => {
      sessionStorage.setItem('wattgraph.token', $('token').value.trim());
      state.hosts = [];
      refresh();
    });
    $('controls').addEventListener('submit', (e) => { e.preventDefault(); refresh(); });
    for (const id of ['level', 'host', 'namespace', 'percentile', 'mode']) $(id).addEventListener('change', refresh);
    $('sizeBy').addEventListener('change', drawMap);
    $('latencyOf').addEventListener('change', drawMap);
    $('live').addEventListener('change', () => {
      clearInterval(state.timer);
      if ($('live').checked) state.timer = setInterval(refresh, 10000);
    });
    $('placementForm').addEventListener('submit', placement);
    $('powerForm').addEventListener('submit', power);
    // ?run=placement,power runs the panels once after the first load (used by the browser test).
    const run = (params.get('run') || '').split(',');
    refresh().then(() => Promise.all([run.includes('placement') ? placement() : null,
      run.includes('power') ? power() : null])).then(() => document.body.setAttribute('data-panels', 'done'));
  }

  init();
})();
