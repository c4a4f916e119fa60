/*
 * The page with token authentication on (ServiceMapAuthBrowserTest: read token page-reader, admin token
 * page-admin). The token is typed into the page or given once in the fragment; it is sent as a header and kept
 * in sessionStorage, never in a URL.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { drawn, fillBounds, FIXTURE_BOUNDS, refreshed, withPage } from './lib.mjs';

test('without a token the page shows the 401 and asks for one', async () => {
  // The browser logs each 401 answer as a console error.
  await withPage('/', { allowConsoleErrors: true }, async (page) => {
    await page.waitForFunction(() => /type a bearer token above/.test(document.getElementById('status').textContent));
    assert.match(await page.locator('#status').textContent(), /401/);
    assert.deepEqual((await drawn(page)).nodes, []);
  });
});

test('a read token typed into the page draws the map and stays out of every URL', async () => {
  await withPage('/', { allowConsoleErrors: true }, async (page, { requests }) => {
    await page.waitForFunction(() => /401/.test(document.getElementById('status').textContent));
    await page.fill('#token', 'page-reader');
    await page.press('#token', 'Enter');
    await refreshed(page);
    assert.equal((await drawn(page)).nodes.length, 5);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('wattgraph.token')), 'page-reader');
    // Kept for the tab only: nothing of it in localStorage, which outlives the session.
    assert.ok(!(await page.evaluate(() => JSON.stringify({ ...localStorage }))).includes('page-reader'));
    // A reload keeps the token (sessionStorage) without it being in the address.
    await page.reload();
    await refreshed(page);
    assert.equal((await drawn(page)).nodes.length, 5);
    assert.equal(await page.inputValue('#token'), 'page-reader');
    assert.ok(!page.url().includes('page-reader'), page.url());
    const leaked = requests.filter((u) => u.includes('page-reader'));
    assert.deepEqual(leaked, [], 'the token was in a URL');
  });
});

test('a read token in the fragment draws the map and leaves the address bar', async () => {
  await withPage('/#token=page-reader', {}, async (page) => {
    await refreshed(page);
    assert.equal((await drawn(page)).nodes.length, 5);
    assert.ok(!page.url().includes('token'), page.url());
    assert.ok(!(await page.locator('#status').textContent()).includes('type a bearer token above'));
  });
});

test('an admin token also runs the placement and power panels', async () => {
  await withPage('/?run=placement#token=page-admin', async (page) => {
    await page.waitForSelector('body[data-panels="done"]');
    assert.match(await page.locator('#placementResult').textContent(), /kubectl patch deployment/);
    await fillBounds(page, FIXTURE_BOUNDS);
    await page.click('#powerForm button[type=submit]');
    await page.waitForSelector('#powerBudgets');
    assert.ok(!(await page.locator('#placementResult').textContent()).includes('needs an admin token'));
  });
});
