/*
 * The power-budget panel: one row of inputs per host, filled from what was measured (power and CPU from the
 * host's latest window in /api/v1/history, idle power from /api/v1/hosts) and the bounds the budget loop
 * published (/api/v1/power/budgets/current); a figure nobody measured stays empty with a note, never a default.
 * Below, each host's measured power over the time range against the budgets the loop published over that range
 * (/api/v1/power/budgets/history, a step line) and the one computed in the panel.
 */
/* global uPlot */
import { $, ago, api, el, fmt, query, table } from './util.js';

const FIELDS = [ // input name, HostPower field, header
  ['current', 'currentPowerW', 'power W'],
  ['actionable', 'actionablePowerW', 'actionable W'],
  ['idle', 'idlePowerW', 'idle W'],
  ['min', 'minW', 'min W'],
  ['max', 'maxW', 'max W'],
];

/** The newest window of {@code windows} that has {@code key}, or null. */
export function latest(windows, key) {
  for (let i = windows.length - 1; i >= 0; i--) if (windows[i][key] != null) return windows[i];
  return null;
}

/** At Unix ns {@code ns}, as local time (to the second). */
const at = (ns) => new Date(ns / 1e6).toLocaleString();

/**
 * What is known of each host: {@code hosts} from /api/v1/hosts, {@code histories} (host id -> /history answer or
 * null), {@code published} (host id -> the loop's BudgetView). Returns host id -> {value, note} per field, and cpu.
 */
export function measured(hosts, histories, published) {
  const out = new Map();
  for (const h of hosts) {
    const w = (histories.get(h.id) || { windows: [] }).windows;
    const p = latest(w, 'powerW'), c = latest(w, 'cpuUsage'), b = published.get(h.id);
    out.set(h.id, {
      current: p ? { value: p.powerW, note: 'measured, window ending ' + at(p.windowEndNs) }
        : { value: null, note: 'no measured power for this host' },
      actionable: { value: null, note: 'not measured per host (empty counts 0 W)' },
      idle: h.idlePowerW != null ? { value: h.idlePowerW, note: 'measured idle share (agent)' }
        : { value: null, note: 'no measured idle power (empty counts 0 W)' },
      min: b ? { value: b.minWatts, note: 'bound of the budget loop' } : { value: null, note: 'no configured bound: type one' },
      max: b ? { value: b.maxWatts, note: 'bound of the budget loop' } : { value: null, note: 'no configured bound: type one' },
      cpu: c ? { value: c.cpuUsage, note: 'measured, window ending ' + at(c.windowEndNs) }
        : { value: null, note: 'no measured CPU' },
    });
  }
  return out;
}

/**
 * (Re)draws the inputs for {@code known} (from {@link measured}); a value the user typed is kept, a figure
 * still as measured follows the new measurement.
 */
export function drawInputs(known) {
  const box = $('powerHosts');
  const typed = new Map();
  box.querySelectorAll('input[data-host]').forEach((i) => {
    if (i.value !== (i.dataset.measured || '')) typed.set(i.dataset.host + '|' + i.name, i.value);
  });
  box.textContent = '';
  const t = el('table', { id: 'powerInputs' }, el('tr', {}, el('th', { text: 'host' }),
    ...FIELDS.map(([, , h]) => el('th', { text: h })), el('th', { text: 'CPU cores' })));
  for (const [host, k] of known) {
    const tr = el('tr', { 'data-power-host': host }, el('td', { text: host }));
    for (const [name, , header] of FIELDS) {
      const f = k[name];
      const shown = f.value == null ? '' : String(f.value);
      const input = el('input', { type: 'number', min: 0, step: 'any', name, size: 6, 'data-host': host,
        'data-measured': shown, 'aria-label': host + ' ' + header, title: f.note });
      input.value = typed.has(host + '|' + name) ? typed.get(host + '|' + name) : shown;
      tr.appendChild(el('td', { 'data-field': name }, input,
        el('div', { class: f.value == null ? 'note none' : 'note', text: f.note })));
    }
    tr.appendChild(el('td', { class: 'num', 'data-field': 'cpu' }, fmt(k.cpu.value),
      el('div', { class: k.cpu.value == null ? 'note none' : 'note', text: k.cpu.note })));
    t.appendChild(tr);
  }
  box.appendChild(t);
}

/** The hosts as typed: HostPower records, or an Error naming the host and field that is missing or wrong. */
export function readInputs() {
  const hosts = [];
  for (const tr of $('powerHosts').querySelectorAll('tr[data-power-host]')) {
    const host = tr.dataset.powerHost, h = { host };
    for (const [name, field, header] of FIELDS) {
      const v = tr.querySelector('input[name="' + name + '"]').value.trim();
      if (v === '') {
        if (name === 'min' || name === 'max') throw new Error(host + ': ' + header + ' is empty: type the host\'s bound');
        h[field] = null;
      } else if (!(Number(v) >= 0)) {
        throw new Error(host + ': ' + header + ' must be a number ≥ 0, not ' + v);
      } else h[field] = Number(v);
    }
    hosts.push(h);
  }
  if (hosts.length === 0) throw new Error('no host to budget');
  return hosts;
}

/**
 * Fetches what the inputs start from and draws them, and each host's published budgets over {@code bounds}
 * ({fromNs, toNs}); returns {known, histories, published, budgets}.
 */
export async function load(hosts, bounds = {}) {
  const histories = new Map();
  await Promise.all(hosts.map(async (h) => {
    try {
      histories.set(h.id, await api('/api/v1/history' + query({ level: 'host', id: h.id })));
    } catch (e) {
      if (e.status !== 404) throw e;
      histories.set(h.id, null); // no Host node with history: nothing measured
    }
  }));
  const budgets = new Map();
  await Promise.all(hosts.map(async (h) => {
    const r = await api('/api/v1/power/budgets/history' + query({ host: h.id, fromNs: bounds.fromNs,
      toNs: bounds.toNs }));
    budgets.set(h.id, r.budgets);
  }));
  const st = await api('/api/v1/power/budgets/current');
  const published = new Map((st.budgets || []).map((b) => [b.hostId, b]));
  const known = measured(hosts, histories, published);
  drawInputs(known);
  return { known, histories, published, budgets };
}

/**
 * The published budgets as a step function: [t s, W or null] where each budget starts (not before
 * {@code fromNs}), a null where one expired before the next began, and the last one's end (its validity or
 * {@code endNs}, whichever is first). Budgets oldest first, as /budgets/history answers.
 */
export function budgetSteps(budgets, fromNs, endNs) {
  const out = [];
  for (let i = 0; i < budgets.length; i++) {
    const b = budgets[i], next = i + 1 < budgets.length ? budgets[i + 1].computedAtNs : endNs;
    const start = fromNs != null ? Math.max(b.computedAtNs, fromNs) : b.computedAtNs;
    out.push([start / 1e9, b.budgetWatts]);
    const until = Math.min(b.validUntilNs, next);
    if (i + 1 === budgets.length) { if (until > start) out.push([until / 1e9, b.budgetWatts]); }
    else if (b.validUntilNs < next) out.push([b.validUntilNs / 1e9, null]);
  }
  return out;
}

/** The value of step function {@code steps} at {@code t}: the last step at or before it (null before the first). */
function stepAt(steps, t) {
  let v = null;
  for (const [ts, w] of steps) { if (ts <= t) v = w; else break; }
  return v;
}

/** Computes budgets from the inputs as they stand ({@code level}, {@code namespace}: PRESTO's graph). */
export async function compute(level, namespace) {
  const out = $('powerResult');
  let hosts;
  try { hosts = readInputs(); } catch (e) {
    out.textContent = '';
    out.appendChild(el('div', { id: 'powerInputError', class: 'error', text: e.message }));
    return null;
  }
  out.textContent = 'computing…';
  const body = { policy: $('powerPolicy').value, hosts };
  if (body.policy === 'presto') {
    body.slaMs = Number($('slaMs').value);
    body.level = level === 'container' ? 'container' : 'pod';
    if ($('entryPoint').value.trim()) body.entryPoint = $('entryPoint').value.trim();
  }
  if (namespace) body.namespace = namespace;
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
    return r.budgets;
  } catch (e) {
    out.textContent = e.message;
    return null;
  }
}

/**
 * Each host's measured power in {@code range} ({fromNs, toNs, label}) from {@code loaded} (what {@link load}
 * returned) against the budgets the loop published over the range, drawn as steps (each holds until the next one
 * or its validity ends), and {@code computed} (host -> W, the panel's last computation, or null) as a line.
 */
export function drawCharts(charts, loaded, range, computed) {
  charts.clear();
  const num = (v) => (v == null ? null : Number(v));
  const fromNs = num(range.fromNs), toNs = num(range.toNs);
  for (const [host, hist] of loaded.histories) {
    const w = (hist ? hist.windows : []).filter((v) => v.powerW != null
      && (fromNs == null || v.windowEndNs >= fromNs) && (toNs == null || v.windowEndNs <= toNs));
    const history = (loaded.budgets && loaded.budgets.get(host)) || [];
    const steps = budgetSteps(history, fromNs, toNs != null ? Math.min(toNs, Date.now() * 1e6) : Date.now() * 1e6);
    const b = loaded.published.get(host), c = computed ? computed.get(host) : null;
    if (w.length === 0 && steps.length === 0) {
      charts.box.appendChild(el('div', { class: 'meta', 'data-power-chart-none': host,
        text: host + ': no measured power in ' + range.label + '.' }));
      continue;
    }
    const measuredAt = new Map(w.map((v) => [v.windowEndNs / 1e9, v.powerW]));
    const x = [...new Set([...measuredAt.keys(), ...steps.map((s) => s[0])])].sort((p, q) => p - q);
    const ys = [x.map((t) => (measuredAt.has(t) ? measuredAt.get(t) : null))], names = ['measured'];
    const colours = ['#e8590c'], extra = [{ spanGaps: true }];
    if (steps.length) {
      ys.push(x.map((t) => stepAt(steps, t))); names.push('published budget'); colours.push('#1c7ed6');
      extra.push({ paths: uPlot.paths.stepped({ align: 1 }) });
    }
    if (c != null) { ys.push(x.map(() => c)); names.push('computed budget'); colours.push('#7048e8'); extra.push({}); }
    const wrap = charts.plot('power-' + host, host + ': power (W) against its budgets, ' + range.label, x, ys,
      colours, names, null, extra);
    wrap.setAttribute('data-host', host);
    wrap.setAttribute('data-measured-points', String(w.length));
    if (b) wrap.setAttribute('data-published', String(b.budgetWatts));
    if (history.length) wrap.setAttribute('data-budget-steps', history.map((h) => h.budgetWatts).join(','));
    if (c != null) wrap.setAttribute('data-computed', String(c));
    const last = history.length ? history[history.length - 1] : null;
    wrap.appendChild(el('div', { class: 'meta', text: last ? history.length + ' published budget'
      + (history.length === 1 ? '' : 's') + ' in ' + range.label + ', the last ' + fmt(last.budgetWatts) + ' W ('
      + last.policy + ', ' + ago(Date.now() - last.computedAtNs / 1e6) + ' ago)'
      : 'no budget published for ' + host + ' in ' + range.label + ' (budget loop off, or the host not budgeted)' }));
  }
}
