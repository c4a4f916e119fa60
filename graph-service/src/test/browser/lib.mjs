/*
 * What the browser tests share: Debian's Chromium driven by playwright-core (no downloaded browser), the page
 * of the service under test (WATTGRAPH_URL, set by the JUnit class that started it), screenshots under
 * WATTGRAPH_SHOTS, and reading back what the map drew (window.serviceMap: the page's Cytoscape instance).
 */
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import path from 'node:path';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

export const BASE = process.env.WATTGRAPH_URL;
const SHOTS = process.env.WATTGRAPH_SHOTS || 'target/screenshots';
const CHROMIUM = process.env.WATTGRAPH_CHROMIUM || '/usr/bin/chromium';
assert.ok(BASE, 'WATTGRAPH_URL (the service under test) is not set');

/** A fresh browser and page at {@code path}; page errors and console errors are collected and fail close(). */
export async function open(pathAndQuery = '/', options = {}) {
  const browser = await chromium.launch({ executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking'] });
  const context = await browser.newContext({ viewport: options.viewport || { width: 1400, height: 1000 },
    timezoneId: 'UTC', locale: 'en-GB' });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push('page error: ' + e.message));
  // An entity without history is a 404 the page expects (it says so in the charts panel).
  const expected = (url, status) => options.allowConsoleErrors || (status === 404 && /\/api\/v1\/history\?/.test(url));
  page.on('console', (m) => {
    if (m.type() === 'error' && !expected(m.location().url, /status of 404/.test(m.text()) ? 404 : 0)) {
      errors.push('console: ' + m.text() + ' (' + m.location().url + ')');
    }
  });
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('response', (r) => { if (r.status() >= 400 && !expected(r.url(), r.status())) errors.push(r.status() + ' ' + r.url()); });
  await page.goto(BASE + pathAndQuery);
  return {
    browser, page, errors, requests,
    async close() {
      await browser.close();
      assert.deepEqual(errors, [], 'the page reported errors');
    },
  };
}

/** Runs {@code fn(page, session)} on a fresh page at {@code pathAndQuery}; the browser is closed whatever happens. */
export async function withPage(pathAndQuery, options, fn) {
  if (typeof options === 'function') [fn, options] = [options, {}];
  const s = await open(pathAndQuery, options);
  try {
    await fn(s.page, s);
  } catch (e) {
    await s.browser.close();
    throw e;
  }
  await s.close();
}

/** Waits until the page finished its n-th refresh (body[data-refreshes]). */
export async function refreshed(page, n = 1) {
  const done = await page.waitForFunction((k) => {
    const refreshes = Number(document.body.dataset.refreshes || 0);
    const status = document.getElementById('status');
    return refreshes >= k ? { ok: true } : status.className === 'error' ? { ok: false, status: status.textContent } : null;
  }, n, { timeout: 120000 }); // a guard for a loaded machine, not a performance assertion
  const r = await done.jsonValue();
  assert.ok(r.ok, 'the page failed to refresh: ' + r.status);
}

export const refreshes = (page) => page.evaluate(() => Number(document.body.dataset.refreshes || 0));

/** Does {@code action} and waits for the refresh it causes. */
export async function andRefresh(page, action) {
  const n = await refreshes(page);
  await action();
  await refreshed(page, n + 1);
}

export async function shot(page, name) {
  await page.screenshot({ path: path.join(SHOTS, name + '.png'), fullPage: true });
}

/** What the map shows: visible leaf nodes and edges (ids sorted), the selection, and element data by id. */
export function drawn(page) {
  return page.evaluate(() => {
    const cy = window.serviceMap.cy;
    // Shown = display not none (Cytoscape's ':visible' is cached and can lag behind a class change).
    const vis = cy.elements().filter((e) => e.pstyle('display').value !== 'none');
    const data = {};
    cy.elements().forEach((e) => { data[e.id()] = { ...e.data(), classes: e.classes() }; });
    return {
      nodes: vis.nodes().filter((n) => !n.isParent()).map((n) => n.id()).sort(),
      parents: vis.nodes().filter((n) => n.isParent()).map((n) => n.id()).sort(),
      edges: vis.edges().map((e) => e.id()).sort(),
      selected: cy.$(':selected').map((e) => e.id()).sort(),
      zoom: cy.zoom(), pan: cy.pan(), data,
    };
  });
}

/** Where node {@code id} (or the middle of edge SOURCE>TARGET) is on the screen, in page pixels. */
export function screenPoint(page, id) {
  return page.evaluate((key) => {
    const cy = window.serviceMap.cy;
    const e = cy.getElementById(key);
    if (e.empty()) return null;
    const box = document.getElementById('map').getBoundingClientRect();
    let p = e.isNode() ? e.renderedPosition() : e.renderedMidpoint();
    if (e.isEdge()) {
      // A person clicks a visible part of the edge: where another node is drawn over its midpoint,
      // a point further along it (the curve through both ends and the midpoint), clear of every node.
      const a = e.renderedSourceEndpoint();
      const b = e.renderedTargetEndpoint();
      const c = { x: 2 * p.x - (a.x + b.x) / 2, y: 2 * p.y - (a.y + b.y) / 2 };
      const at = (t) => ({ x: (1 - t) ** 2 * a.x + 2 * t * (1 - t) * c.x + t * t * b.x,
                           y: (1 - t) ** 2 * a.y + 2 * t * (1 - t) * c.y + t * t * b.y });
      const covered = (q) => cy.nodes().some((n) => !n.isParent() && (() => {
        const bb = n.renderedBoundingBox();
        return q.x >= bb.x1 - 3 && q.x <= bb.x2 + 3 && q.y >= bb.y1 - 3 && q.y <= bb.y2 + 3;
      })());
      const free = [0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8].map(at).find((q) => !covered(q));
      if (free) p = free;
    }
    return { x: box.left + p.x, y: box.top + p.y };
  }, id);
}

/** Clicks node or edge {@code id} where it is drawn, as a person would. */
export async function clickOn(page, id) {
  const p = await screenPoint(page, id);
  assert.ok(p, id + ' is not on the map');
  await page.mouse.click(p.x, p.y);
}

/** Model positions of the leaf nodes, by id. */
export function positions(page) {
  return page.evaluate(() => {
    const out = {};
    window.serviceMap.cy.nodes().forEach((n) => { if (!n.isParent()) out[n.id()] = { ...n.position() }; });
    return out;
  });
}

/** Text of each row of the detail table, by its data-row. */
export function detailRows(page) {
  return page.evaluate(() => {
    const out = {};
    document.querySelectorAll('#detailTable tr').forEach((tr) => {
      out[tr.dataset.row || tr.querySelector('th').textContent] = tr.querySelector('td').textContent;
    });
    return out;
  });
}

const AXE = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's violations of impact serious or critical on the page as it is now, one line each. */
export async function seriousViolations(page) {
  await page.evaluate(AXE); // evaluated by the test in the page, never served by the service
  const violations = await page.evaluate(async () => (await window.axe.run(document)).violations);
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => v.id + ' (' + v.impact + '): ' + v.help + ' at ' + v.nodes.map((n) => n.target.join(' ')).join(', '));
}

/** Types power bounds into the power panel for every host there ({@code bounds}: host -> [min, max] W). */
export async function fillBounds(page, bounds) {
  for (const [host, [min, max]] of Object.entries(bounds)) {
    await page.fill('tr[data-power-host="' + host + '"] input[name="min"]', String(min));
    await page.fill('tr[data-power-host="' + host + '"] input[name="max"]', String(max));
  }
}

/** The fixture's two hosts with bounds typed in, as the power tests need them. */
export const FIXTURE_BOUNDS = { 'host-a': [20, 120], 'host-b': [10, 100] };
