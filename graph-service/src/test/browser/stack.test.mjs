/*
 * The page on the stack of `bin/wattgraph run`, fed by its real agent (tests/run-smoke.sh runs it after it saw
 * the exchange WATTGRAPH_EDGE, client process > server process, in the REST graph): the edge is drawn, search
 * finds the server by its command, clicking the edge shows the bytes the agent measured, the host level holds
 * the host, and a placement requested in its panel is shown.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BASE, andRefresh, clickOn, detailRows, drawn, refreshed, shot, withPage } from './lib.mjs';

const EDGE = process.env.WATTGRAPH_EDGE;
const HOST = process.env.WATTGRAPH_HOST;
assert.ok(EDGE && HOST, 'WATTGRAPH_EDGE (client>server) and WATTGRAPH_HOST are not set');
const [CLIENT, SERVER] = EDGE.split('>');
const bytes = (b) => (b < 1000 ? b.toFixed(0) + ' B' : (b / 1000).toFixed(b < 10000 ? 2 : 1) + ' kB');

test('the live graph as a person uses it: find, click, change level, ask for a placement', async () => {
  await withPage('/?range=1h', async (page) => {
    await refreshed(page);
    let d = await drawn(page);
    assert.ok(d.edges.includes(EDGE), EDGE + ' not drawn: ' + d.edges.join());

    // The server by the name the map gives it (its program, from the command line).
    const name = d.data[SERVER].name || d.data[SERVER].label;
    await page.fill('#search', name);
    const hits = await page.locator('#searchResults button').evaluateAll((bs) => bs.map((b) => b.dataset.nodeId));
    assert.ok(hits.includes(SERVER), hits.join());
    await shot(page, 'stack-search');

    // The edge's bytes as the agent measured them (the graph's figures now: the exchange is closed).
    const edge = (await (await fetch(BASE + '/api/v1/graph?host=' + encodeURIComponent(HOST))).json())
      .edges.find((e) => e.source === CLIENT && e.target === SERVER);
    await clickOn(page, EDGE);
    await page.waitForSelector('#detailTable[data-detail="' + EDGE + '"]');
    assert.equal((await detailRows(page)).bytes, bytes(edge.bytesClientToServer) + ' / ' + bytes(edge.bytesServerToClient));
    await shot(page, 'stack-edge');

    await andRefresh(page, () => page.selectOption('#level', 'host'));
    d = await drawn(page);
    assert.ok(d.nodes.includes('host:' + HOST), d.nodes.join());

    // Placement needs the host's cores, from its first metrics window (ten seconds and the out-of-orderness
    // after the agent's start): until then it answers 400 naming them.
    for (let i = 0; ; i++) {
      const hosts = (await (await fetch(BASE + '/api/v1/hosts')).json()).hosts;
      if (hosts.some((h) => h.id === HOST && h.metricsWindowEndNs)) break;
      assert.ok(i < 120, 'no metrics window of ' + HOST + ' after 120 s');
      await new Promise((r) => setTimeout(r, 1000));
    }
    await page.click('#placementForm button[type=submit]');
    await page.waitForFunction(() => !/^(computing…)?$/.test(document.getElementById('placementResult').textContent));
    assert.match(await page.locator('#placementResult').textContent(), /cross-node .* → .*method .*moves/);
    await shot(page, 'stack-placement');
  });
});
