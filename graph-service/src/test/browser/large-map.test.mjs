/*
 * A large map (over 3,000 nodes and edges) drawn by the page's own map in Chromium: an overview below zoom 2.4
 * (no node labels, edges as lines without arrow heads), the full style above, and back. The graph is generated
 * here and handed to the map as the service's answer would be (ServiceMapBrowserTest's fixture is small).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { refreshed, withPage } from './lib.mjs';

test('a large map is an overview below zoom 2.4 and has labels and arrow heads above it', async () => {
  await withPage('/', async (page) => {
    await refreshed(page);
    const state = () => page.evaluate(() => {
      const cy = window.serviceMap.cy;
      const leaves = cy.nodes().filter((n) => !n.isParent());
      return { zoom: cy.zoom(), nodes: leaves.length, edges: cy.edges().length,
        overview: cy.elements('.overview').length,
        labels: [...new Set(leaves.map((n) => n.pstyle('label').strValue === '' ? 'none' : 'some'))],
        arrows: [...new Set(cy.edges().map((e) => e.pstyle('target-arrow-shape').strValue))],
        curves: [...new Set(cy.edges().map((e) => e.pstyle('curve-style').strValue))],
        placed: leaves.filter((n) => Number.isFinite(n.position('x')) && Number.isFinite(n.position('y'))).length,
        spots: new Set(leaves.map((n) => Math.round(n.position('x')) + ',' + Math.round(n.position('y')))).size };
    });
    await page.evaluate(async () => {
      const nodes = [], edges = [];
      for (let i = 0; i < 1500; i++) nodes.push({ id: 'p' + i, kind: 'process', name: 'proc-' + i, hostId: 'h' + (i % 10) });
      for (let i = 0; i < 1600; i++) {
        // Distinct pairs, no loops: 7i + 1 (+ 1 for the second round) is never i modulo 1500.
        edges.push({ source: 'p' + i % 1500, target: 'p' + (i * 7 + 1 + Math.floor(i / 1500)) % 1500, bytesClientToServer: 10 + i,
          bytesServerToClient: 100 });
      }
      await window.serviceMap.render({ nodes, edges }, { level: 'process', hosts: [], path: null, percentile: 'p99',
        latencyOf: 'client', sizeBy: 'auto', groupBy: 'none' });
    });
    const far = await state();
    assert.equal(far.nodes, 1500);
    assert.equal(far.edges, 1600);
    assert.ok(far.zoom < 2.4, 'the whole map fits below zoom 2.4, at ' + far.zoom);
    assert.equal(far.overview, 3100);
    assert.deepEqual(far.labels, ['none']);
    assert.deepEqual(far.arrows, ['none']);
    assert.deepEqual(far.curves, ['haystack']);
    // Laid out (the headless draft): every node placed, each at its own spot (the draft alone stacks nodes that
    // have the same links, about a hundred of these 1,500, on one spot).
    assert.equal(far.placed, 1500);
    assert.equal(far.spots, 1500, 'nodes at distinct spots');
    await page.evaluate(() => window.serviceMap.cy.zoom(3));
    const near = await state();
    assert.equal(near.overview, 0);
    assert.deepEqual(near.labels, ['some']);
    assert.deepEqual(near.arrows, ['triangle']);
    assert.deepEqual(near.curves, ['straight']);
    await page.evaluate(() => window.serviceMap.cy.zoom(0.5));
    assert.equal((await state()).overview, 3100);
  });
});
