/*
 * The page over a graph seen in the last hours (ServiceMapLiveBrowserTest.CYPHER; WATTGRAPH_NOW_MS is its "now"):
 * the time range, stable positions, charts of the selection, refreshes that keep the view.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { andRefresh, clickOn, drawn, positions, refreshed, shot, withPage } from './lib.mjs';

const NOW = Number(process.env.WATTGRAPH_NOW_MS);
const CLIENT = '203.0.113.50', API = 'node-1/10/1', DB = 'node-2/20/1', CACHE = 'node-2/30/1', BATCH = 'node-1/40/1';
const local = (ms) => new Date(ms).toISOString().slice(0, 19); // the page's context runs in UTC
const dist = (a, b) => Math.hypot(a.x - b.x, a.y - b.y);

test('the time range decides which nodes and edges are drawn', async () => {
  await withPage('/?range=5m', async (page) => {
    await refreshed(page);
    let d = await drawn(page);
    assert.deepEqual(d.nodes, [CLIENT, API, DB, CACHE].sort());
    assert.deepEqual(d.edges, [CLIENT + '>' + API, API + '>' + DB, API + '>' + CACHE].sort());
    await andRefresh(page, () => page.selectOption('#range', '1h')); // batch -> postgres, 30-120 min ago
    d = await drawn(page);
    assert.deepEqual(d.nodes, [CLIENT, API, DB, CACHE, BATCH].sort());
    assert.ok(d.edges.includes(BATCH + '>' + DB) && !d.edges.includes(BATCH + '>' + CACHE), d.edges.join());
    await andRefresh(page, () => page.selectOption('#range', '24h')); // batch -> redis, 2-3 h ago
    d = await drawn(page);
    assert.equal(d.edges.length, 5);
    // Custom: 175 to 125 min ago holds only batch -> redis (batch -> postgres began 120 min ago).
    await page.selectOption('#range', 'custom');
    await page.fill('#rangeFrom', local(NOW - 175 * 60000));
    await page.fill('#rangeTo', local(NOW - 125 * 60000));
    await andRefresh(page, () => page.click('#rangeApply'));
    d = await drawn(page);
    assert.deepEqual(d.nodes, [CACHE, BATCH].sort());
    assert.deepEqual(d.edges, [BATCH + '>' + CACHE]);
    await shot(page, 'service-map-custom-range');
  });
});

test('nodes keep their positions when a range adds or removes nodes, on refresh and across a reload', async () => {
  await withPage('/?range=5m', async (page) => {
    await refreshed(page);
    const first = await positions(page);
    assert.deepEqual(Object.keys(first).sort(), [CLIENT, API, DB, CACHE].sort());
    // batch appears with the last hour: nothing else moves, and batch lands next to postgres, its one neighbour.
    await andRefresh(page, () => page.selectOption('#range', '1h'));
    const more = await positions(page);
    for (const id of Object.keys(first)) assert.deepEqual(more[id], first[id], id + ' moved');
    const spread = Math.max(...Object.values(first).flatMap((a) => Object.values(first).map((b) => dist(a, b))));
    assert.ok(dist(more[BATCH], more[DB]) < Math.min(100, spread), JSON.stringify({ batch: more[BATCH], db: more[DB], spread }));
    await shot(page, 'service-map-new-node');
    // A refresh, and the narrower range again: nobody moves.
    await andRefresh(page, () => page.click('#refresh'));
    assert.deepEqual(await positions(page), more);
    await andRefresh(page, () => page.selectOption('#range', '5m'));
    const back = await positions(page);
    for (const id of Object.keys(first)) assert.deepEqual(back[id], first[id], id + ' moved');
    // The next visit (same browser: localStorage, positions to 0.1) draws the map where it was.
    await page.reload();
    await refreshed(page);
    const again = await positions(page);
    for (const id of Object.keys(first)) assert.ok(dist(again[id], first[id]) < 0.1, id + ' moved across the reload');
  });
});

test('a refresh keeps the zoom, the pan and the selection', async () => {
  await withPage('/?range=1h', async (page) => {
    await refreshed(page);
    await clickOn(page, API);
    await page.click('#zoomIn');
    const before = await drawn(page);
    await andRefresh(page, () => page.click('#refresh'));
    const after = await drawn(page);
    assert.equal(after.zoom, before.zoom);
    assert.deepEqual(after.pan, before.pan);
    assert.deepEqual(after.selected, [API]);
    assert.equal(await page.locator('#detailTable').getAttribute('data-detail'), API);
  });
});

test('charts follow the selection and the time range', async () => {
  await withPage('/?range=1h&level=container', async (page) => {
    await refreshed(page);
    await clickOn(page, 'container:c-api');
    const points = async (n) => {
      await page.waitForFunction((k) => document.querySelector('#charts .chart[data-chart="cpu"]')
        ?.getAttribute('data-points') === String(k), n);
      for (const name of ['power', 'rate']) {
        assert.equal(await page.locator('#charts .chart[data-chart="' + name + '"]').getAttribute('data-points'), String(n));
      }
    };
    await points(6); // the windows of the last hour
    assert.match(await page.locator('#chartsFor').textContent(), /container c-api, last 1 h/);
    await shot(page, 'service-map-history');
    await andRefresh(page, () => page.selectOption('#range', '5m'));
    await points(2);
    await andRefresh(page, () => page.selectOption('#range', 'all'));
    await points(7);
    // api's process: no window of its own here, and its latency as sampled at each refresh of this level.
    await andRefresh(page, () => page.selectOption('#level', 'process'));
    await page.waitForSelector('#chartsFor[data-key="' + API + '"]');
    assert.equal(await page.locator('#charts').getAttribute('data-windows'), '0');
    assert.match(await page.locator('#charts').textContent(), /No window in this time range/);
    await andRefresh(page, () => page.click('#refresh'));
    await page.waitForSelector('#charts .chart[data-chart="latency"] canvas');
    assert.equal(await page.locator('#charts .chart[data-chart="latency"]').getAttribute('data-points'), '2');
  });
});
