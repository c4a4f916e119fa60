/*
 * The power-budget panel: one row of inputs per host, filled from what was measured (power and CPU from the
 * host's latest window in /api/v1/history, idle power from /api/v1/hosts) and the bounds the budget loop
 * published (/api/v1/power/budgets/current); a figure nobody measured stays empty with a note, never a default.
 * Below, each host's measured power over the time range against its published and computed budgets.
 */
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

/** Fetches what the inputs start from and draws them; returns {known, histories, published}. */
export async function load(hosts) {
  const histories = new Map();
  await Promise.all(hosts.map(async (h) => {
    try {
      histories.set(h.id, await api('/api/v1/history' + query({ level: 'host', id: h.id })));
    } catch (e) {
      if (e.status !== 404) throw e;
      histories.set(h.id, null); // no Host node with history: nothing measured
    }
  }));
  const st = await api('/api/v1/power/budgets/current');
  const published = new Map((st.budgets || []).map((b) => [b.hostId, b]));
  const known = measured(hosts, histories, published);
  drawInputs(known);
  return { known, histories, published };
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
 * returned), with its budgets as lines: the one the loop published (the API keeps no budget history, so the
 * current one is drawn across the range) and {@code computed} (host -> W, the panel's last computation, or null).
 */
export function drawCharts(charts, loaded, range, computed) {
  charts.clear();
  for (const [host, hist] of loaded.histories) {
    const w = (hist ? hist.windows : []).filter((v) => v.powerW != null
      && (range.fromNs == null || v.windowEndNs >= range.fromNs) && (range.toNs == null || v.windowEndNs <= range.toNs));
    const b = loaded.published.get(host), c = computed ? computed.get(host) : null;
    if (w.length === 0) {
      charts.box.appendChild(el('div', { class: 'meta', 'data-power-chart-none': host,
        text: host + ': no measured power in ' + range.label + '.' }));
      continue;
    }
    const x = w.map((v) => v.windowEndNs / 1e9);
    const ys = [w.map((v) => v.powerW)], names = ['measured'], colours = ['#e8590c'];
    if (b) { ys.push(x.map(() => b.budgetWatts)); names.push('published budget'); colours.push('#1c7ed6'); }
    if (c != null) { ys.push(x.map(() => c)); names.push('computed budget'); colours.push('#7048e8'); }
    const wrap = charts.plot('power-' + host, host + ': power (W) against its budgets, ' + range.label, x, ys,
      colours, names, null);
    wrap.setAttribute('data-host', host);
    if (b) wrap.setAttribute('data-published', String(b.budgetWatts));
    if (c != null) wrap.setAttribute('data-computed', String(c));
    wrap.appendChild(el('div', { class: 'meta', text: b ? 'published budget ' + fmt(b.budgetWatts) + ' W ('
      + b.policy + ', ' + ago(Date.now() - b.computedAtNs / 1e6) + ' ago): the API keeps no budget history, the '
      + 'current one is drawn across the range' : 'no published budget for ' + host + ' (budget loop off, or the '
      + 'host not budgeted)' }));
  }
}
