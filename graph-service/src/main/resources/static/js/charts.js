/*
 * Charts of the selection with uPlot: CPU, power and request rate per window from GET /api/v1/history (the
 * stream job's recent windows, kept on process, container, namespace and host nodes), over the chosen time
 * range; and latency percentiles as this page saw them at each refresh (the API keeps no latency history).
 */
/* global uPlot */
import { $, api, el, fmt, query } from './util.js';

const HISTORY_KINDS = new Set(['process', 'container', 'namespace', 'host']);
const SAMPLES = 120; // latency samples kept per element: 20 min of live refresh

/** The history entity of a map node: its level and id as /api/v1/history names them, or null. */
export function historyRef(d) {
  if (!HISTORY_KINDS.has(d.kind)) return null;
  return { level: d.kind, id: d.kind === 'process' ? d.id : d.id.slice(d.id.indexOf(':') + 1) };
}

/** Latency percentiles of every node and edge at each refresh, per level, a bounded ring each. */
export class LatencySamples {
  constructor() {
    this.byKey = new Map();
  }

  record(level, graph, tMs) {
    const add = (key, src, prefix) => {
      const v = [src[prefix + 'P50Ms'], src[prefix + 'P90Ms'], src[prefix + 'P99Ms']];
      if (v.every((x) => x == null)) return;
      let ring = this.byKey.get(level + '|' + key);
      if (!ring) this.byKey.set(level + '|' + key, ring = []);
      if (ring.length && ring[ring.length - 1][0] === tMs / 1000) return;
      ring.push([tMs / 1000, ...v]);
      if (ring.length > SAMPLES) ring.shift();
    };
    for (const n of graph.nodes) if (n.metrics) add(n.id, n.metrics, 'latency');
    for (const e of graph.edges) add(e.source + '>' + e.target, e, 'latency');
  }

  get(level, key) {
    return this.byKey.get(level + '|' + key) || [];
  }
}

export class Charts {
  constructor(box) {
    this.box = box;
    this.plots = [];
    this.seq = 0;
  }

  clear(message) {
    for (const p of this.plots) p.destroy();
    this.plots = [];
    this.box.textContent = '';
    if (message) this.box.appendChild(el('div', { class: 'meta', text: message }));
  }

  /**
   * Draws the charts of the selected node or edge: {@code sel} = {key, node (its data) or null}, {@code range} =
   * {fromNs, toNs, label}, {@code latency} = [[t s, p50, p90, p99]...].
   */
  async show(sel, range, latency) {
    const seq = ++this.seq;
    if (!sel) { this.clear('Select a node to see its history.'); return; }
    const ref = sel.node ? historyRef(sel.node) : null;
    let hist = null, note = null;
    if (ref) {
      try {
        hist = await api('/api/v1/history' + query({ level: ref.level, id: ref.id, fromNs: range.fromNs,
          toNs: range.toNs }));
      } catch (e) {
        note = e.status === 404 ? 'No history kept for ' + ref.level + ' ' + ref.id + '.' : e.message;
      }
    } else {
      note = sel.node ? 'No history at ' + sel.node.kind + ' level: the stream job keeps it for processes, '
        + 'containers, namespaces and hosts.' : 'Edges have no history: latency below as sampled by this page.';
    }
    if (seq !== this.seq) return; // a newer selection won
    this.clear(note);
    const title = el('div', { class: 'meta', id: 'chartsFor', 'data-key': sel.key,
      text: (ref ? ref.level + ' ' + ref.id : sel.key) + ', ' + range.label });
    this.box.prepend(title);
    if (hist) {
      const w = hist.windows;
      const x = w.map((v) => v.windowEndNs / 1e9);
      this.box.setAttribute('data-windows', String(w.length));
      if (w.length === 0) this.box.appendChild(el('div', { class: 'meta', text: 'No window in this time range.' }));
      else {
        this.plot('cpu', 'CPU (cores)', x, [w.map((v) => v.cpuUsage)], ['#4263eb'], ['CPU'], hist.cpuUsage);
        this.plot('power', 'power (W)', x, [w.map((v) => v.powerW)], ['#e8590c'], ['power'], hist.powerW);
        this.plot('rate', 'requests/s', x, [w.map((v) => v.requestRate)], ['#0ca678'], ['req/s'], hist.requestRate);
      }
    } else {
      this.box.removeAttribute('data-windows');
    }
    if (latency.length === 1) {
      const [, p50, p90, p99] = latency[0];
      this.box.appendChild(el('div', { class: 'meta', 'data-chart': 'latency', 'data-points': 1, text: 'Latency p50 / p90 / p99: '
        + [p50, p90, p99].map((v) => fmt(v)).join(' / ') + ' ms (one sample so far: the chart starts at the second '
        + 'refresh; turn on live to collect).' }));
    } else if (latency.length) {
      this.plot('latency', 'latency (ms), sampled at each refresh of this page', latency.map((s) => s[0]),
        [1, 2, 3].map((i) => latency.map((s) => s[i])), ['#2b8a3e', '#f08c00', '#c92a2a'], ['p50', 'p90', 'p99'], null);
    } else {
      this.box.appendChild(el('div', { class: 'meta', text: 'Latency: no percentile seen for this selection yet '
        + '(sampled at each refresh; turn on live to collect).' }));
    }
  }

  /** A uPlot chart of series {@code ys} over {@code x} (s); {@code extra}: uPlot options per series (e.g. paths). */
  plot(name, label, x, ys, colours, names, summary, extra = []) {
    const wrap = el('div', { class: 'chart', 'data-chart': name, 'data-points': x.length });
    const head = el('div', { class: 'chart-title', text: label });
    if (summary && summary.windows) {
      head.appendChild(el('span', { class: 'meta', text: '  mean ' + fmt(summary.mean) + ', p95 ' + fmt(summary.p95)
        + ', max ' + fmt(summary.max) }));
    }
    wrap.appendChild(head);
    this.box.appendChild(wrap);
    const width = Math.max(240, this.box.clientWidth - 8);
    const opts = { width, height: 110, legend: { show: names.length > 1 }, cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true } }, axes: [{ size: 28 }, { size: 44 }],
      series: [{}, ...names.map((n, i) => ({ label: n, stroke: colours[i], width: 1.5, spanGaps: false,
        points: { show: x.length < 40 }, ...(extra[i] || {}) }))] };
    const u = new uPlot(opts, [x, ...ys], wrap);
    this.plots.push(u);
    wrap.uplot = u; // what was drawn, for the browser tests
    return wrap;
  }
}
