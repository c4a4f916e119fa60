/*
 * Where the service map's first render goes: loads the page once in Debian's Chromium with the V8 sampling
 * profiler on, until the map is on screen (as service-map-bench.mjs measures it), and prints the self time by
 * script and by function (Cytoscape's unminified build swapped in), and the page's User Timing measures. Not a test. Usage (a service on the graph):
 *   node src/test/browser/bench/service-map-profile.mjs http://127.0.0.1:PORT [TOP]
 */
import { chromium } from 'playwright-core';

const [service, topArg = '25'] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
const page = await context.newPage();
// Cytoscape's unminified build in place of the minified one (same version), so that functions have their names.
await page.route('**/vendor/cytoscape.min.js', (r) => r.fulfill({ contentType: 'text/javascript',
  path: new URL('../../../../node_modules/cytoscape/dist/cytoscape.umd.js', import.meta.url).pathname }));
await page.addInitScript(() => {
  window.__shown = null;
  const poll = () => {
    if (window.serviceMap && Number(document.getElementById('map').dataset.nodes) > 0) {
      requestAnimationFrame(() => { window.__shown = performance.now(); });
    } else requestAnimationFrame(poll);
  };
  requestAnimationFrame(poll);
});
const cdp = await context.newCDPSession(page);
await cdp.send('Profiler.enable');
await cdp.send('Profiler.setSamplingInterval', { interval: 500 });
await cdp.send('Profiler.start');
await page.goto(service + '/');
await page.waitForFunction(() => window.__shown !== null, null, { timeout: 300000 });
const { profile } = await cdp.send('Profiler.stop');
const shown = await page.evaluate(() => window.__shown);
const measures = await page.evaluate(() => performance.getEntriesByType('measure').map((m) => [m.name, m.duration]));
// Requests started before the map was on screen: [start, end] ms since navigation start.
const requests = await page.evaluate((end) => performance.getEntriesByType('resource')
  .filter((r) => r.startTime < end).map((r) => [r.name.replace(/^https?:\/\/[^/]+/, ''), r.startTime, r.responseEnd]), shown);

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map();
profile.samples.forEach((id, i) => self.set(id, (self.get(id) || 0) + (profile.timeDeltas[i] || 0) / 1000));
const bucket = (key, ms, into) => into.set(key, (into.get(key) || 0) + ms);
const byScript = new Map(), byFunction = new Map();
for (const [id, ms] of self) {
  const f = byId.get(id).callFrame;
  const script = f.url ? f.url.replace(/^.*\//, '') : f.functionName || '(native)';
  bucket(script, ms, byScript);
  bucket((f.functionName || '(anonymous)') + ' ' + script + ':' + (f.lineNumber + 1), ms, byFunction);
}
// Inclusive time per function (a recursive call counted once): what each step of the page costs with its callees.
const inclusive = new Map();
const keyOf = (f) => (f.functionName || '(anonymous)') + ' ' + (f.url ? f.url.replace(/^.*\//, '') : '') + ':' + (f.lineNumber + 1);
const walk = (id, onStack) => {
  const n = byId.get(id);
  const key = keyOf(n.callFrame);
  let total = self.get(id) || 0;
  const inner = onStack.has(key) ? onStack : new Set([...onStack, key]);
  for (const c of n.children || []) total += walk(c, inner);
  if (!onStack.has(key)) bucket(key, total, inclusive);
  return total;
};
walk(profile.nodes[0].id, new Set());
// FOCUS=substring: the inclusive time of the callees of the functions whose key contains it.
const focusChildren = new Map();
if (process.env.FOCUS) {
  const sum = (id) => (self.get(id) || 0) + (byId.get(id).children || []).reduce((a, c) => a + sum(c), 0);
  for (const n of profile.nodes) {
    if (!keyOf(n.callFrame).includes(process.env.FOCUS)) continue;
    bucket('(self)', self.get(n.id) || 0, focusChildren);
    for (const c of n.children || []) bucket(keyOf(byId.get(c).callFrame), sum(c), focusChildren);
  }
}
const top = (m, n) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => v.toFixed(0).padStart(7) + ' ms  ' + k);
console.log('first render ' + shown.toFixed(0) + ' ms; measures: ' + measures.map(([k, v]) => k + ' ' + v.toFixed(0) + ' ms').join(', '));
console.log('requests before it:\n' + requests.map(([u, a, b]) => a.toFixed(0).padStart(7) + ' → '
  + b.toFixed(0).padStart(6) + ' ms  ' + u.slice(0, 110)).join('\n'));
console.log('self time by script:\n' + top(byScript, 12).join('\n'));
console.log('inclusive time, page and layout functions:\n' + top(new Map([...inclusive].filter(([k]) =>
  /(map|app|util|panels|power|positions|charts|cytoscape-fcose|cose-base|layout-base)\.js/.test(k))), Number(topArg)).join('\n'));
if (process.env.FOCUS) console.log('callees of ' + process.env.FOCUS + ':\n' + top(focusChildren, 20).join('\n'));
console.log('self time by function:\n' + top(byFunction, Number(topArg)).join('\n'));
await browser.close();
