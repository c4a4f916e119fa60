/*
 * The service map over the shared fixture graph (GraphFixture), used as a person uses it: clicks on the canvas,
 * typing, menus. Run by ServiceMapBrowserTest (one JUnit test per test name here).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { andRefresh, BASE, clickOn, detailRows, drawn, positions, refreshed, screenPoint, shot, withPage } from './lib.mjs';

const NGINX = 'host-a/100/1000', CURL = 'host-a/200/2000', PG = 'host-b/300/3000';
const VISITOR = '198.51.100.9', WEB = '203.0.113.7:443';

test('the map draws every node and edge with the critical path and the panels', async () => {
  await withPage('/?run=placement', async (page) => {
    await refreshed(page);
    await page.waitForSelector('body[data-panels="done"]');
    await shot(page, 'service-map');
    const d = await drawn(page);
    assert.deepEqual(d.nodes, [VISITOR, WEB, NGINX, CURL, PG].sort());
    assert.deepEqual(d.edges, [VISITOR + '>' + NGINX, NGINX + '>' + PG, CURL + '>' + NGINX, PG + '>' + WEB].sort());
    assert.equal(d.data[NGINX + '>' + PG].bytes, 7500);
    assert.equal(d.data[VISITOR + '>' + NGINX].bytes, 4040);
    assert.equal(d.data[VISITOR + '>' + NGINX].latency, 20);
    // The critical path (widest over p99: nginx -> postgres, the one internal edge with a p99), that edge only.
    assert.deepEqual(Object.values(d.data).filter((e) => e.classes.includes('critical')).map((e) => e.id).sort(),
      [NGINX, NGINX + '>' + PG, PG].sort());
    assert.equal(await page.locator('#criticalPath li').count(), 2);
    assert.match(await page.locator('#mapSummary').textContent(), /^5 nodes, 4 edges at process level/);
    // Heat-map: external, host-a, host-b -> 9 cells; nginx -> postgres is 500 bytes a -> b.
    assert.equal(await page.locator('#heatmap .heat-cell').count(), 9);
    assert.equal(await page.locator('.heat-cell[data-from="host-a"][data-to="host-b"]').getAttribute('data-bytes'), '500');
    assert.equal(await page.locator('.heat-cell[data-from="host-b"][data-to="host-a"]').getAttribute('data-bytes'), '7000');
    // Panels: slowest routes first, the budget loop off (the power panel: power.test.mjs).
    const routes = await page.locator('#routesTable').textContent();
    assert.ok(routes.indexOf('POST /orders') >= 0 && routes.indexOf('POST /orders') < routes.indexOf('GET /stats'), routes);
    assert.ok(routes.includes('GET /static/aaaaaaaa…') && !routes.includes('GET /health'), routes);
    assert.match(await page.locator('#budgetLoopOff').textContent(), /The budget loop is off/);
  });
});

test('clicking an edge shows its bytes and latencies; edges are coloured by the chosen latency', async () => {
  await withPage('/?percentile=p90&latencyOf=server', {}, async (page) => {
    await refreshed(page);
    let d = await drawn(page);
    assert.equal(d.data[NGINX + '>' + PG].colour, 'rgb(201,42,42)'); // 5 ms server time: the highest, red
    assert.equal(d.data[CURL + '>' + NGINX].colour, 'rgb(43,138,62)'); // 1 ms: green
    assert.equal(d.data[VISITOR + '>' + NGINX].colour, '#aab4bf'); // no server time: grey
    assert.match(await page.locator('#latencyLegend').textContent(), /edge colour: p90 server time 1\.0 ms/);

    await clickOn(page, NGINX + '>' + PG);
    await page.waitForSelector('#detailTable');
    assert.equal(await page.locator('#detailTable').getAttribute('data-detail'), NGINX + '>' + PG);
    const rows = await detailRows(page);
    assert.equal(rows.bytes, '500 B / 7.00 kB');
    assert.equal(rows['client-p90'], '6.00 ms');
    assert.equal(rows['server-p90'], '5.00 ms');
    assert.equal(rows['client-p99'], '8.00 ms');
    assert.equal(rows.network, '0.40 ms');
    await shot(page, 'service-map-edge-detail');

    // Client RTT instead: 6 and 1.5 ms. Then the postgres node's detail.
    await page.selectOption('#latencyOf', 'client');
    await page.waitForFunction(() => /client RTT 1\.5 ms/.test(document.getElementById('latencyLegend').textContent));
    d = await drawn(page);
    assert.equal(d.data[NGINX + '>' + PG].latency, 6);
    assert.equal(d.data[NGINX + '>' + PG].colour, 'rgb(201,42,42)');
    assert.equal(d.data[CURL + '>' + NGINX].latency, 1.5);
    await clickOn(page, PG);
    await page.waitForSelector('#detailTable[data-detail="' + PG + '"]');
    const pg = await detailRows(page);
    assert.equal(pg['server-p90'], '4.50 ms');
    assert.equal(pg.utilization, '30.0 %');
    // A click on empty canvas clears the selection.
    const box = await page.locator('#map').boundingBox();
    await page.mouse.click(box.x + 5, box.y + 5);
    await page.waitForSelector('#detailTable', { state: 'detached' });
  });
});

test('nodes keep their positions when a filter removes nodes and adds them back', async () => {
  // Issue 28: the SVG page laid the map out afresh at every refresh; with host-a's filter lifted, each of its
  // four nodes moved by 133-264 px there.
  await withPage('/', async (page) => {
    await refreshed(page);
    const all = await positions(page);
    await andRefresh(page, () => page.selectOption('#host', 'host-a')); // postgres -> 203.0.113.7 leaves
    const a = await positions(page);
    assert.deepEqual(Object.keys(a).sort(), [VISITOR, NGINX, CURL, PG].sort());
    for (const id of Object.keys(a)) assert.deepEqual(a[id], all[id], id + ' moved');
    await andRefresh(page, () => page.selectOption('#host', ''));
    assert.deepEqual(await positions(page), all);
  });
});

test('search finds a node by name, pod, namespace and host', async () => {
  await withPage('/', {}, async (page) => {
    await refreshed(page);
    const results = () => page.locator('#searchResults button').evaluateAll((bs) => bs.map((b) => b.dataset.nodeId));
    await page.fill('#search', 'postgres'); // a name
    assert.deepEqual(await results(), [PG]);
    await page.fill('#search', 'web-0'); // a pod
    assert.deepEqual(await results(), [NGINX]);
    await page.fill('#search', 'SHOP'); // a namespace, any case
    assert.deepEqual(await results(), [NGINX]);
    await page.fill('#search', 'host-a'); // a host
    assert.deepEqual((await results()).sort(), [NGINX, CURL].sort());
    assert.equal(await page.locator('#searchCount').textContent(), '2 found');
    assert.deepEqual(Object.values((await drawn(page)).data).filter((e) => e.classes.includes('match')).map((e) => e.id)
      .sort(), [NGINX, CURL].sort());
    // Enter picks the first hit: selected, its detail open, and in view at a readable zoom.
    await page.fill('#search', 'postgres');
    await page.press('#search', 'Enter');
    await page.waitForSelector('#detailTable[data-detail="' + PG + '"]');
    assert.deepEqual((await drawn(page)).selected, [PG]);
    // (Centred with its label: the node itself a few pixels above the middle.)
    const p = await screenPoint(page, PG), box = await page.locator('#map').boundingBox();
    assert.ok(Math.abs(p.x - (box.x + box.width / 2)) < 20 && Math.abs(p.y - (box.y + box.height / 2)) < 20,
      JSON.stringify([p, box]));
    assert.ok((await drawn(page)).zoom >= 1.2);
    await page.fill('#search', 'no-such-thing');
    assert.equal(await page.locator('#searchCount').textContent(), '0 found');
  });
});

test('changing the level keeps the selection', async () => {
  await withPage('/', {}, async (page) => {
    await refreshed(page);
    await clickOn(page, NGINX);
    await page.waitForSelector('#detailTable[data-detail="' + NGINX + '"]');
    const level = async (value, detail) => {
      await andRefresh(page, () => page.selectOption('#level', value));
      await page.waitForSelector('#detailTable[data-detail="' + detail + '"]');
      return drawn(page);
    };
    // nginx runs in container ctr-1 of pod shop/web-0 (service web) on host-a.
    let d = await level('container', 'container:ctr-1');
    assert.deepEqual(d.selected, ['container:ctr-1']);
    assert.ok(d.nodes.includes('container:ctr-1') && !d.nodes.includes(NGINX), d.nodes.join());
    d = await level('pod', 'pod:shop/web-0');
    assert.deepEqual(d.selected, ['pod:shop/web-0']);
    d = await level('service', 'service:shop/web');
    assert.deepEqual(d.selected, ['service:shop/web']);
    d = await level('namespace', 'namespace:shop');
    assert.deepEqual(d.selected, ['namespace:shop']);
    d = await level('host', 'host:host-a');
    assert.deepEqual(d.selected, ['host:host-a']);
    assert.deepEqual(d.nodes, [VISITOR, WEB, 'host:host-a', 'host:host-b'].sort());
    assert.match(await page.locator('#mapSummary').textContent(), /^4 nodes, \d+ edges at host level/);
    await shot(page, 'service-map-host-level');
    // Back to processes: the host's selection becomes its processes (nginx and curl).
    d = await level('process', NGINX);
    assert.deepEqual(d.selected, [NGINX, CURL].sort());
    // An edge carries over too: nginx -> postgres at host level is host-a -> host-b.
    await clickOn(page, NGINX + '>' + PG);
    await page.waitForSelector('#detailTable[data-detail="' + NGINX + '>' + PG + '"]');
    d = await level('host', 'host:host-a>host:host-b');
    assert.deepEqual(d.selected, ['host:host-a>host:host-b']);
  });
});

test('zoom, pan, fit and focus on a neighbourhood', async () => {
  await withPage('/', {}, async (page) => {
    await refreshed(page);
    const before = await drawn(page);
    await page.click('#zoomIn');
    const zoomed = await drawn(page);
    assert.ok(zoomed.zoom > before.zoom * 1.3, zoomed.zoom + ' vs ' + before.zoom);
    // The mouse wheel zooms too, and dragging the background pans.
    const box = await page.locator('#map').boundingBox();
    await page.mouse.move(box.x + 8, box.y + 8);
    await page.mouse.wheel(0, 400);
    const wheeled = await drawn(page);
    assert.ok(wheeled.zoom < zoomed.zoom, wheeled.zoom + ' vs ' + zoomed.zoom);
    await page.mouse.move(box.x + 8, box.y + 8);
    await page.mouse.down();
    await page.mouse.move(box.x + 108, box.y + 58, { steps: 5 });
    await page.mouse.up();
    const panned = await drawn(page);
    assert.ok(Math.abs(panned.pan.x - wheeled.pan.x - 100) < 1 && Math.abs(panned.pan.y - wheeled.pan.y - 50) < 1,
      JSON.stringify([wheeled.pan, panned.pan]));
    // Fit: every node inside the map's box.
    await page.click('#fit');
    for (const id of before.nodes) {
      const p = await screenPoint(page, id);
      assert.ok(p.x > box.x && p.x < box.x + box.width && p.y > box.y && p.y < box.y + box.height, id);
    }
    // Focus on curl: only curl, nginx and their edge stay; Show all brings the rest back.
    await clickOn(page, CURL);
    await page.click('#focus');
    let d = await drawn(page);
    assert.deepEqual(d.nodes, [NGINX, CURL].sort());
    assert.deepEqual(d.edges, [CURL + '>' + NGINX]);
    await shot(page, 'service-map-focus');
    await page.click('#unfocus');
    d = await drawn(page);
    assert.equal(d.nodes.length, 5);
    // A double click on a node focuses on it too.
    const pg = await screenPoint(page, PG);
    await page.mouse.dblclick(pg.x, pg.y);
    await page.waitForFunction(() => window.serviceMap.focused);
    d = await drawn(page);
    assert.deepEqual(d.nodes, [NGINX, PG, WEB].sort());
  });
});

test('grouping by host draws each host as a box around its nodes', async () => {
  await withPage('/', {}, async (page) => {
    await refreshed(page);
    await page.selectOption('#groupBy', 'host');
    await page.waitForFunction(() => window.serviceMap.cy.nodes(':parent').length === 2);
    const d = await drawn(page);
    assert.deepEqual(d.parents, ['group:host:host-a', 'group:host:host-b']);
    assert.equal(d.data[NGINX].parent, 'group:host:host-a');
    assert.equal(d.data[CURL].parent, 'group:host:host-a');
    assert.equal(d.data[PG].parent, 'group:host:host-b');
    assert.equal(d.data[VISITOR].parent ?? null, null); // externals belong to no host
    // The two boxes do not overlap.
    const boxes = await page.evaluate(() => ['group:host:host-a', 'group:host:host-b']
      .map((id) => window.serviceMap.cy.getElementById(id).boundingBox()));
    const [a, b] = boxes;
    assert.ok(a.x2 <= b.x1 || b.x2 <= a.x1 || a.y2 <= b.y1 || b.y2 <= a.y1, JSON.stringify(boxes));
    await shot(page, 'service-map-grouped');
    // Namespace grouping: nginx's namespace shop; and back to none.
    await page.selectOption('#groupBy', 'namespace');
    await page.waitForFunction(() => window.serviceMap.cy.nodes(':parent').length === 1);
    assert.equal((await drawn(page)).data[NGINX].parent, 'group:namespace:shop');
    await page.selectOption('#groupBy', 'none');
    await page.waitForFunction(() => window.serviceMap.cy.nodes(':parent').length === 0);
    assert.equal((await drawn(page)).nodes.length, 5);
  });
});

test('the time range filters the map by when edges were seen', async () => {
  // The fixture's edges were seen in the first 100 ns of 1970: in "all" and in a custom range around then only.
  await withPage('/', {}, async (page) => {
    await refreshed(page);
    assert.equal((await drawn(page)).nodes.length, 5);
    await andRefresh(page, () => page.selectOption('#range', '5m'));
    let d = await drawn(page);
    assert.deepEqual(d.nodes, []);
    assert.match(await page.locator('#mapEmpty').textContent(), /No traffic at process level in last 5 min/);
    assert.equal(await page.locator('#map').getAttribute('data-nodes'), '0');
    await shot(page, 'service-map-empty-range');
    await page.selectOption('#range', 'custom');
    await page.fill('#rangeFrom', '1970-01-01T00:00:00');
    await page.fill('#rangeTo', '1970-01-01T00:00:01');
    await andRefresh(page, () => page.click('#rangeApply'));
    d = await drawn(page);
    assert.equal(d.nodes.length, 5);
    assert.match(await page.locator('#mapSummary').textContent(), /1970-01-01 00:00 – 1970-01-01 00:00:01/);
    // A bad range is refused with a message naming it, and the map stays as it was.
    await page.fill('#rangeFrom', '1970-01-02T00:00:00');
    await page.click('#rangeApply');
    await page.waitForFunction(() => document.getElementById('status').textContent === 'time range: from is after to');
    assert.equal((await drawn(page)).nodes.length, 5);
  });
});

test('a selected container shows its CPU, power and request-rate history', async () => {
  await withPage('/?level=container', {}, async (page) => {
    await refreshed(page);
    await clickOn(page, 'container:ctr-1');
    await page.waitForSelector('#charts .chart[data-chart="cpu"]');
    // ctr-1's four windows (GraphFixture): one uPlot chart per figure, four points each.
    for (const name of ['cpu', 'power', 'rate']) {
      assert.equal(await page.locator('#charts .chart[data-chart="' + name + '"]').getAttribute('data-points'), '4');
      assert.equal(await page.locator('#charts .chart[data-chart="' + name + '"] canvas').count(), 1);
    }
    assert.equal(await page.locator('#chartsFor').getAttribute('data-key'), 'container:ctr-1');
    assert.match(await page.locator('#charts .chart[data-chart="cpu"]').textContent(), /mean 2\.00, p95 6\.00, max 6\.00/);
    await shot(page, 'service-map-charts');
    // A pod has no history: the panel says so.
    await andRefresh(page, () => page.selectOption('#level', 'pod'));
    await page.waitForSelector('#chartsFor[data-key="pod:shop/web-0"]');
    assert.match(await page.locator('#charts').textContent(), /No history at pod level/);
  });
});

test('the critical path shows its latency at each hop; a placement\'s moves are drawn on the map, with patches to copy', async () => {
  const cp = await (await fetch(BASE + '/api/v1/analysis/critical-path?level=process&percentile=p99&mode=widest')).json();
  assert.deepEqual(cp.path, [NGINX, PG]);
  const hop = cp.edgeLatenciesMs[0].toFixed(2) + ' ms';
  await withPage('/', { viewport: { width: 1400, height: 1300 } }, async (page) => {
    await refreshed(page);
    let d = await drawn(page);
    assert.equal(d.data[NGINX + '>' + PG].note, hop);
    assert.equal(d.data[CURL + '>' + NGINX].note, '');
    // A placement requested in its panel: postgres (host-b) joins nginx (host-a, container ctr-1).
    await page.click('#placementForm button[type=submit]');
    await page.waitForSelector('#placementMoves');
    assert.equal(await page.locator('#placementSaved').textContent(), '7.50 kB');
    d = await drawn(page);
    assert.ok(d.data[PG].classes.includes('moved'), d.data[PG].classes);
    assert.equal(d.data[PG].moveLabel, 'postgres\nhost-b → host-a');
    assert.ok(!d.data[NGINX].classes.includes('moved'));
    assert.ok(d.data[NGINX + '>' + PG].classes.includes('localised'));
    assert.equal(d.data[NGINX + '>' + PG].note, hop + '\n−7.50 kB cross-node');
    assert.equal(d.data[CURL + '>' + NGINX].note, '');
    await shot(page, 'service-map-placement-moves');
    // The patch, copied with its button.
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: BASE });
    await page.click('button.copy[data-workload="' + PG + '"]');
    await page.waitForFunction(() => document.querySelector('button.copy').textContent === 'Copied');
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    assert.match(copied, /^kubectl patch deployment 'postgres' .*"kubernetes.io\/hostname":"host-a"/);
    assert.equal(copied, await page.locator('pre.patch').textContent());
    // The moves stay on the map through a refresh and at the container level.
    await andRefresh(page, () => page.selectOption('#level', 'container'));
    d = await drawn(page);
    assert.ok(d.data[PG].classes.includes('moved'));
    assert.ok(d.data['container:ctr-1>' + PG].classes.includes('localised'));
  });
});
