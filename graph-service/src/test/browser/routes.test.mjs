/*
 * HTTP routes per selected node over the fixture graph (ServiceMapBrowserTest; GraphFixture: nginx serves three
 * routes and calls one, postgres serves one, curl none).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { andRefresh, clickOn, refreshed, shot, withPage } from './lib.mjs';

const NGINX = 'host-a/100/1000', CURL = 'host-a/200/2000', PG = 'host-b/300/3000';

/** The routes table of the detail for {@code key}: per row its cells' text. */
async function routes(page, key) {
  await page.waitForSelector('#detailRoutes[data-for="' + key + '"] #detailRoutesTable, '
    + '#detailRoutes[data-for="' + key + '"] .meta');
  return page.locator('#detailRoutesTable tr[data-route]').evaluateAll((trs) => trs.map((tr) =>
    Array.from(tr.querySelectorAll('td')).map((td) => td.textContent)));
}

test('selecting a process or its service lists its HTTP routes with request counts and latency percentiles', async () => {
  await withPage('/', { viewport: { width: 1400, height: 1300 } }, async (page) => {
    await refreshed(page);
    await clickOn(page, NGINX);
    // Slowest p99 first: role, route, requests, req/s, p50, p90, p99.
    assert.deepEqual(await routes(page, NGINX), [
      ['server', 'POST /orders', '40', '4.00', '8.00', '12.00', '30.00'],
      ['server', 'GET /users/{id}', '300', '30.00', '2.00', '4.00', '7.00'],
      ['client', 'GET /health', '10', '1.00', '1.00', '1.50', '2.00'],
      ['server', 'GET /static/aaaaaaaa…', '5', '0.50', '0.40', '0.60', '0.90']]);
    await shot(page, 'service-map-node-routes');
    await clickOn(page, PG);
    assert.deepEqual(await routes(page, PG), [['server', 'GET /stats', '2', '0.20', '20.00', '20.00', '20.00']]);
    await clickOn(page, CURL);
    assert.deepEqual(await routes(page, CURL), []);
    assert.match(await page.locator('#detailRoutes').textContent(), /No HTTP\/1\.x route seen in the latest window/);
    // At service level, nginx's service shop/web: the routes of its processes, each named.
    await clickOn(page, NGINX);
    await routes(page, NGINX);
    await andRefresh(page, () => page.selectOption('#level', 'service'));
    const web = await routes(page, 'service:shop/web');
    assert.equal(web.length, 4);
    assert.deepEqual(web[0], ['nginx (' + NGINX + ')', 'server', 'POST /orders', '40', '4.00', '8.00', '12.00', '30.00']);
    await shot(page, 'service-map-service-routes');
  });
});
