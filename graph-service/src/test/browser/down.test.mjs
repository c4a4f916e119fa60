/*
 * The page when Neo4j or the stream job is down (ServiceMapDownBrowserTest owns the Neo4j and lets this script
 * stop and start it, and age the hosts' newest metrics window, through WATTGRAPH_CONTROL). The banner names
 * what is down and since when, the map keeps what it drew, and the page recovers without a click.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { andRefresh, drawn, refreshed, refreshes, seriousViolations, shot, withPage } from './lib.mjs';

const CONTROL = process.env.WATTGRAPH_CONTROL;
assert.ok(CONTROL, 'WATTGRAPH_CONTROL (the test class\'s control server) is not set');

async function control(what) {
  const r = await fetch(CONTROL + what, { method: 'POST' });
  assert.equal(r.status, 204, what + ': ' + (await r.text()));
}

const banner = (page) => page.locator('#banner');
// Guards for a loaded machine (the page retries every 5 s), not performance assertions.
const WAIT = { timeout: 120000 };

test('Neo4j stopped: a banner names it and since when, the map stays, and the page recovers by itself', async () => {
  let stopped = false;
  // The browser logs each 503 as a console error.
  await withPage('/?level=pod', { allowConsoleErrors: true }, async (page) => {
    await refreshed(page);
    assert.equal(await banner(page).isHidden(), true);
    const before = await drawn(page);
    assert.equal(before.nodes.length, 5, before.nodes.join());

    await control('/neo4j/stop');
    stopped = true;
    await page.click('#refresh');
    await page.waitForSelector('body[data-down="neo4j"]', WAIT);
    const text = await banner(page).textContent();
    assert.match(text, /Neo4j is unavailable \(graph-service answers 503\) since \d\d:\d\d:\d\d\. The map is the one of \d\d:\d\d:\d\d\./);
    assert.equal(await banner(page).isVisible(), true);
    assert.equal(await banner(page).getAttribute('role'), 'alert');
    assert.deepEqual((await drawn(page)).nodes, before.nodes, 'the last map is kept');
    await shot(page, 'service-map-neo4j-down');
    assert.deepEqual(await seriousViolations(page), [], 'the banner is readable');

    const n = await refreshes(page);
    await control('/neo4j/start');
    stopped = false;
    // No click: the page retries by itself.
    await page.waitForSelector('body[data-down=""]', WAIT);
    assert.equal(await banner(page).isHidden(), true);
    assert.ok(await refreshes(page) > n);
    // The new Neo4j is seeded after it opens its port, so that first read may have caught it half-written;
    // the next refresh shows the same map as before.
    await andRefresh(page, () => page.click('#refresh'));
    assert.deepEqual((await drawn(page)).nodes, before.nodes);
    assert.doesNotMatch(await page.locator('#status').textContent(), /503/);
    await shot(page, 'service-map-neo4j-back');
  }).finally(async () => {
    if (stopped) await control('/neo4j/start'); // the next test needs it
  });
});

test('the job\'s newest window is old: a stale-data banner with its time, gone when a new window arrives', async () => {
  await control('/windows?ageMs=600000');
  try {
    await withPage('/', async (page) => {
      await refreshed(page);
      await page.waitForSelector('body[data-down="job"]', WAIT);
      const text = await banner(page).textContent();
      assert.match(text, /^Stale data\. The stream job is down or lagging: the newest metrics window ended at .+ \((10|11) min ago\); the map shows the graph as of then\.$/);
      assert.equal((await drawn(page)).nodes.length, 5);
      await shot(page, 'service-map-job-stale');
      assert.deepEqual(await seriousViolations(page), [], 'the banner is readable');

      await control('/windows?ageMs=0');
      await page.waitForSelector('body[data-down=""]', WAIT);
      assert.equal(await banner(page).isHidden(), true);
    });
  } finally {
    await control('/windows?ageMs=0');
  }
});
