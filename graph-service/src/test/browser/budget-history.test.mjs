/*
 * The power chart's budget steps (BudgetHistoryTest: two MANUAL budgets for host-h published at WATTGRAPH_T1 and
 * WATTGRAPH_T2, Unix ns, 40 then 60 W; host-h's windows 40 s and 20 s before the first and between the two).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { shot, refreshed, withPage } from './lib.mjs';

const T1 = Number(process.env.WATTGRAPH_T1) / 1e9, T2 = Number(process.env.WATTGRAPH_T2) / 1e9;

test('two budgets published at different times are two steps against measured power', async () => {
  assert.ok(T2 > T1, 'WATTGRAPH_T1 and WATTGRAPH_T2 (the budgets\' times) are not set');
  await withPage('/', { viewport: { width: 1400, height: 1300 } }, async (page) => {
    await refreshed(page);
    const chart = page.locator('#powerCharts .chart[data-chart="power-host-h"]');
    await chart.waitFor();
    assert.equal(await chart.getAttribute('data-budget-steps'), '40,60');
    assert.equal(await chart.getAttribute('data-measured-points'), '3');
    assert.match(await chart.textContent(), /2 published budgets in all time, the last 60\.00 W \(MANUAL, /);
    // What uPlot drew: the windows, and the budget as a step function (none before the first budget).
    const drawn = await chart.evaluate((w) => ({ labels: w.uplot.series.map((s) => s.label || ''),
      x: [...w.uplot.data[0]], measured: [...w.uplot.data[1]], budget: [...w.uplot.data[2]] }));
    assert.deepEqual(drawn.labels.slice(1), ['measured', 'published budget']);
    const near = (a, b) => Math.abs(a - b) < 1e-3;
    const mid = (T1 + T2) / 2;
    const expected = [[T1 - 40, 30, null], [T1 - 20, 35, null], [T1, null, 40], [mid, 45, 40], [T2, null, 60]];
    expected.forEach(([t, m, b], i) => {
      assert.ok(near(drawn.x[i], t), 'x[' + i + '] = ' + drawn.x[i] + ', expected ' + t);
      assert.equal(drawn.measured[i], m, 'measured at x[' + i + ']');
      assert.equal(drawn.budget[i], b, 'budget at x[' + i + ']');
    });
    // The last step holds until the page's now (the budget is valid three periods).
    assert.equal(drawn.x.length, 6);
    assert.ok(drawn.x[5] > T2);
    assert.equal(drawn.budget[5], 60);
    // As a person reads it: the cursor between the two budgets shows 40 W, after the second 60 W.
    const legendAt = async (t) => {
      const p = await chart.evaluate((w, at) => {
        const r = w.uplot.over.getBoundingClientRect();
        return { x: r.left + w.uplot.valToPos(at, 'x'), y: r.top + r.height / 2 };
      }, t);
      await page.mouse.move(p.x, p.y);
      return chart.locator('.u-legend .u-series').nth(2).locator('.u-value').textContent();
    };
    assert.equal(await legendAt(mid), '40');
    await shot(page, 'service-map-budget-history');
    assert.equal(await legendAt(T2), '60');
    assert.match(await legendAt(T1 - 20), /^(--)?$/, 'no budget before the first');
  });
});
