/*
 * The panels beside the map: host×host heat-map, critical path list, placement form (power: power.js), the
 * slowest HTTP routes and the budget loop's published budgets.
 */
import { $, ago, api, el, fmt, fmtBytes, query, table } from './util.js';

export function drawHeatmap(m) {
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

export function drawCritical(cp, percentile) {
  const box = $('critical');
  box.textContent = '';
  if (!cp || !cp.path || cp.path.length === 0) {
    box.appendChild(el('div', { class: 'meta', text: 'No path: no internal edge carries ' + percentile
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

/** Requests a placement and shows it; {@code show(answer, workloadLevel)} draws its moves on the map. */
export async function placement(level, namespace, show) {
  const out = $('placementResult');
  out.textContent = 'computing…';
  const body = { method: $('placementMethod').value, level: level === 'pod' ? 'pod' : 'container' };
  if (namespace) body.namespace = namespace;
  if ($('nodeWeight').value) body.nodeWeight = Number($('nodeWeight').value);
  try {
    const r = await api('/api/v1/placement', body);
    out.textContent = '';
    out.appendChild(el('div', {},
      el('span', { class: 'kpi' }, 'cross-node ', el('b', { text: fmtBytes(r.crossNodeBytesBefore) }), ' → ',
        el('b', { text: fmtBytes(r.crossNodeBytesAfter) })),
      el('span', { class: 'kpi' }, 'nodes ', el('b', { text: r.nodesUsedBefore == null ? '–' : r.nodesUsedBefore }),
        ' → ', el('b', { text: r.nodesUsedAfter })),
      el('span', { class: 'kpi' }, 'saved ', el('b', { id: 'placementSaved',
        text: fmtBytes(r.crossNodeBytesBefore - r.crossNodeBytesAfter) }), r.crossNodeBytesBefore > 0
        ? ' (' + fmt(100 * (1 - r.crossNodeBytesAfter / r.crossNodeBytesBefore), 0) + ' %)' : ''),
      el('span', { class: 'kpi' }, 'method ', el('b', { text: r.method }), r.feasible ? '' : ' (infeasible!)')));
    out.appendChild(el('div', { class: 'meta', text: (r.moves || []).length + ' moves'
      + ((r.moves || []).length ? ', drawn on the map (double purple ring: before → after host; dashed edge: '
        + 'traffic that stops crossing nodes)' : '') }));
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
      const pre = el('pre', { class: 'patch', tabindex: 0, text: p.kubectl });
      const copy = el('button', { type: 'button', class: 'copy', 'data-workload': p.workload,
        'aria-label': 'copy the patch for ' + p.workload, text: 'Copy' });
      copy.addEventListener('click', () => copyText(p.kubectl, pre, copy));
      out.appendChild(el('div', { class: 'meta' }, 'patch for ' + p.workload + ' → ' + p.node + ' ', copy));
      out.appendChild(pre);
    }
    if (show) show(r, body.level);
  } catch (e) {
    out.textContent = e.message;
  }
}

/** Copies {@code text} to the clipboard (or, where the page is not a secure context, selects {@code pre} to copy). */
async function copyText(text, pre, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch (e) { // no clipboard API over plain http to another host: the text is selected for Ctrl+C
    window.getSelection().selectAllChildren(pre);
    button.textContent = 'Selected: Ctrl+C';
  }
}

/** Served HTTP routes, slowest p99 first; {@code name(id)} labels a process. */
export async function httpRoutes(host, name) {
  const out = $('routesResult');
  let rows;
  try {
    rows = await api('/api/v1/http-routes' + query({ role: 'server', sort: 'p99', limit: '15', host }));
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
  const t = table(['process', 'route', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms'],
    rows.map((r) => [name(r.entityId), r.method + ' ' + r.path + (r.pathTruncated ? '…' : ''), r.requestRate,
      r.p50Ms, r.p90Ms, r.p99Ms]));
  t.id = 'routesTable';
  out.appendChild(t);
}

/** Age of a Unix-ns instant, e.g. "4 s", "3 min" (ns beyond 2^53 lose sub-µs precision: irrelevant here). */
const age = (ns) => (ns == null ? '–' : ago(Date.now() - ns / 1e6));

export async function budgetLoop() {
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
