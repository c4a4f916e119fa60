/*
 * Side by side: the service map page of this checkout, the SVG page it replaced (static files of git revision
 * OLD_REV) and, when given, the Cytoscape page of git revision BEFORE_REV (a change's before and after), on the
 * same service and graph, in Debian's Chromium. Not a test; method and results: docs/benchmarks/service-map.md.
 * Usage (a service on the graph, e.g. ServiceMapPageServer synthetic 2000):
 *   node src/test/browser/bench/service-map-bench.mjs http://127.0.0.1:PORT [OLD_REV] [RUNS] [BEFORE_REV]
 * A small proxy here serves the old page's files at /old/ and BEFORE_REV's at /before/ (its vendor/ libraries
 * from the service), everything else passed to the service. FIRST_RENDER_ONLY=1: first visits only, no
 * interaction (a quicker comparison while working on the first render).
 */
import { chromium } from 'playwright-core';
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';

const [service, oldRev = '715f830', runsArg = '5', beforeRev = null] = process.argv.slice(2);
const RUNS = Number(runsArg);
const FRAMES = 120;
const FIRST_ONLY = process.env.FIRST_RENDER_ONLY === '1';
const TYPES = { html: 'text/html', js: 'text/javascript', css: 'text/css' };
const REVS = { old: oldRev, before: beforeRev };

/** A static file of the page at git revision {@code rev}, or null when that revision has none there. */
function gitFile(rev, file) {
  try {
    return execFileSync('git', ['show', rev + ':graph-service/src/main/resources/static/' + file],
      { stdio: ['ignore', 'pipe', 'ignore'] });
  } catch (e) {
    return null;
  }
}

const proxy = http.createServer((req, res) => {
  const m = /^\/(old|before)\/([A-Za-z0-9_./-]+)$/.exec(req.url);
  const body = m && REVS[m[1]] && !m[2].includes('..') ? gitFile(REVS[m[1]], m[2]) : null;
  if (body) {
    res.writeHead(200, { 'Content-Type': TYPES[m[2].split('.').pop()] || 'application/octet-stream' });
    res.end(body);
    return;
  }
  const path = m ? '/' + m[2] : req.url; // the revision's vendor/ libraries: the service's
  const up = http.request(service + path, { method: req.method, headers: req.headers }, (r) => {
    res.writeHead(r.statusCode, r.headers);
    r.pipe(res);
  });
  req.pipe(up);
});
await new Promise((r) => proxy.listen(0, '127.0.0.1', r));
const base = 'http://127.0.0.1:' + proxy.address().port;

// In the page before its scripts: a rAF loop that notes when the map is first on screen, and long tasks.
const PROBE = () => {
  window.__bench = { longTasks: [], shown: null };
  new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__bench.longTasks.push(e.duration); })
    .observe({ type: 'longtask', buffered: true });
  // New page: #map[data-nodes] is set once the map is rendered (before the panels' requests); old: its SVG nodes.
  const drawn = () => (window.serviceMap ? Number(document.getElementById('map').dataset.nodes) > 0
    : document.querySelectorAll('#map g.node').length > 0);
  const poll = () => {
    if (drawn()) requestAnimationFrame(() => { window.__bench.shown = performance.now(); }); // the frame after
    else requestAnimationFrame(poll);
  };
  requestAnimationFrame(poll);
};

/** Frame intervals while the view is zoomed and panned a little every frame (old page: its SVG viewBox). */
const INTERACT = (frames) => new Promise((resolve) => {
  const times = [];
  const cy = window.serviceMap && window.serviceMap.cy;
  const svg = document.getElementById('map');
  let vb = cy ? null : svg.getAttribute('viewBox').split(' ').map(Number);
  let i = 0;
  const step = (t) => {
    times.push(t);
    const zoomIn = Math.floor(i / 30) % 2 === 0;
    if (cy) {
      cy.zoom({ level: cy.zoom() * (zoomIn ? 1.02 : 1 / 1.02), renderedPosition: { x: cy.width() / 2, y: cy.height() / 2 } });
      cy.panBy({ x: 3, y: 1 });
    } else {
      const f = zoomIn ? 1 / 1.02 : 1.02;
      vb = [vb[0] - 3 + vb[2] * (1 - f) / 2, vb[1] - 1 + vb[3] * (1 - f) / 2, vb[2] * f, vb[3] * f];
      svg.setAttribute('viewBox', vb.join(' '));
    }
    if (++i <= frames) requestAnimationFrame(step);
    else resolve(times.slice(1).map((x, k) => x - times[k]));
  };
  requestAnimationFrame(step);
});

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
const median = (a) => { const s = a.slice().sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
const pct = (a, p) => { const s = a.slice().sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };

async function measure(path, storage) {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 }, storageState: storage });
  const p = await context.newPage();
  await p.addInitScript(PROBE);
  // The main thread's CPU time (Chromium's ThreadTime; task durations in thread time): what the page cost, which
  // other processes on a loaded machine stretch much less than the wall-clock times.
  const cdp = await context.newCDPSession(p);
  await cdp.send('Performance.enable', { timeDomain: 'threadTicks' });
  await p.goto(base + path);
  await p.waitForFunction(() => window.__bench.shown !== null, null, { timeout: 300000, polling: 10 });
  const metrics = Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]));
  const cpu = metrics.ThreadTime * 1000;
  const load = await p.evaluate(() => ({ shown: window.__bench.shown, longTasks: window.__bench.longTasks.slice() }));
  const nodes = await p.evaluate(() => (window.serviceMap ? window.serviceMap.cy.nodes().length
    : document.querySelectorAll('#map g.node').length));
  const api = await p.evaluate(() => {
    const r = performance.getEntriesByType('resource').find((e) => e.name.includes('/api/v1/service-graph'));
    return r ? r.responseEnd - r.startTime : null;
  });
  const marks = await p.evaluate(() => Object.fromEntries(performance.getEntriesByType('measure')
    .map((m) => [m.name, m.duration])));
  if (FIRST_ONLY) {
    await context.close();
    return { ...load, cpu, nodes, frames: [], input: [], refresh: null, state: null, api, marks };
  }
  await p.waitForTimeout(1000); // let the panels' requests settle
  const frames = await p.evaluate(INTERACT, FRAMES);
  // A person's gestures (new page only: the old one has no zoom or pan): wheel zooms, then a drag.
  let input = [];
  if (path !== '/old/index.html') {
    await p.evaluate(() => {
      window.__frames = [];
      let last = null;
      window.__recording = true;
      const rec = (t) => {
        if (last !== null) window.__frames.push(t - last);
        last = t;
        if (window.__recording) requestAnimationFrame(rec);
      };
      requestAnimationFrame(rec);
    });
    const box = await p.locator('#map').boundingBox();
    await p.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    for (let k = 0; k < 20; k++) await p.mouse.wheel(0, k < 10 ? -80 : 80);
    await p.mouse.move(box.x + 10, box.y + 10);
    await p.mouse.down();
    await p.mouse.move(box.x + 400, box.y + 300, { steps: 40 });
    await p.mouse.up();
    input = await p.evaluate(() => { window.__recording = false; return window.__frames.slice(); });
  }
  // A refresh: from the click to the next frame with the map redrawn.
  const refresh = await p.evaluate(() => new Promise((resolve) => {
    const t0 = performance.now();
    if (window.serviceMap) {
      const n = Number(document.body.dataset.refreshes);
      const wait = () => (Number(document.body.dataset.refreshes) > n
        ? requestAnimationFrame(() => resolve(performance.now() - t0)) : requestAnimationFrame(wait));
      document.getElementById('refresh').click();
      requestAnimationFrame(wait);
    } else {
      const map = document.getElementById('map');
      const first = map.firstChild;
      const wait = () => (map.firstChild !== first && map.querySelector('g.nodes')
        ? requestAnimationFrame(() => resolve(performance.now() - t0)) : requestAnimationFrame(wait));
      document.getElementById('refresh').click();
      requestAnimationFrame(wait);
    }
  }));
  const state = await context.storageState();
  await context.close();
  return { ...load, cpu, nodes, frames, input, refresh, state, api, marks };
}

const pages = [['new', '/'], ...(beforeRev ? [['before (' + beforeRev + ')', '/before/index.html']] : [])];
const rows = { old: [] };
for (const [name] of pages) { rows[name + ', first visit'] = []; rows[name + ', next visit'] = []; }
process.stderr.write('load average before: ' + os.loadavg().map((x) => x.toFixed(1)).join(' ') + '\n');
for (let r = 0; r < RUNS; r++) {
  rows.old.push(await measure('/old/index.html'));
  for (const [name, path] of pages) {
    const first = await measure(path);
    rows[name + ', first visit'].push(first);
    if (!FIRST_ONLY) rows[name + ', next visit'].push(await measure(path, first.state)); // positions from localStorage
  }
  process.stderr.write('run ' + (r + 1) + ' of ' + RUNS + ', load ' + os.loadavg()[0].toFixed(1) + '\n');
}
const f1 = (x) => (x == null ? '–' : x.toFixed(0) + ' ms');
const intervals = (a) => (a.length ? pct(a, 0.5).toFixed(1) + ' / ' + pct(a, 0.95).toFixed(1) + ' / ' + Math.max(...a).toFixed(1)
  + ' ms (' + a.length + ')' : '–');
console.log('| page | nodes | first render, median (min–max) | main-thread CPU until then, median (min–max) '
  + '| of which service-graph request | map elements / layout | longest task | refresh | frame interval, programmatic zoom+pan p50 / p95 / max (frames) | frame interval, wheel + drag |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const [name, rs] of Object.entries(rows)) {
  if (!rs.length) continue;
  const shown = rs.map((x) => x.shown);
  const mark = (k) => (rs[0].marks[k] == null ? null : median(rs.map((x) => x.marks[k] || 0)));
  console.log('| ' + name + ' | ' + rs[0].nodes + ' | ' + f1(median(shown)) + ' (' + Math.min(...shown).toFixed(0) + '–'
    + Math.max(...shown).toFixed(0) + ') | ' + f1(median(rs.map((x) => x.cpu))) + ' (' + Math.min(...rs.map((x) => x.cpu))
      .toFixed(0) + '–' + Math.max(...rs.map((x) => x.cpu)).toFixed(0) + ') | ' + f1(median(rs.map((x) => x.api))) + ' | '
    + (mark('map: elements') == null ? '–' : f1(mark('map: elements')) + ' / ' + f1(mark('map: layout and placement')))
    + ' | ' + f1(median(rs.map((x) => Math.max(0, ...x.longTasks)))) + ' | ' + f1(median(rs.map((x) => x.refresh))) + ' | '
    + intervals(rs.flatMap((x) => x.frames)) + ' | ' + intervals(rs.flatMap((x) => x.input)) + ' |');
}
// Ratios of the medians of first render (each run's pages were loaded one after the other, so they saw the same load).
const ratio = (k, f) => {
  const of = (key) => median(rows[key].map(f));
  return (of(k) / of('old')).toFixed(2) + '× the old page' + (beforeRev && k.startsWith('new')
    ? ', ' + (of(k) / of(k.replace('new', 'before (' + beforeRev + ')'))).toFixed(2) + '× before' : '');
};
for (const k of Object.keys(rows).filter((x) => x !== 'old' && rows[x].length)) {
  console.log(k + ': first render ' + ratio(k, (x) => x.shown) + '; main-thread CPU ' + ratio(k, (x) => x.cpu));
}
console.log('load average after: ' + os.loadavg().map((x) => x.toFixed(1)).join(' ') + ', runs: ' + RUNS + ', frames per run: ' + FRAMES);
await browser.close();
proxy.close();
