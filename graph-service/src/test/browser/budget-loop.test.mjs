/* The published-budgets panel with the budget loop on (ServiceMapBudgetLoopBrowserTest ran two cycles). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { refreshed, shot, withPage } from './lib.mjs';

test('the panel shows the published budget of every host', async () => {
  await withPage('/', { viewport: { width: 1400, height: 1300 } }, async (page) => {
    await refreshed(page);
    await shot(page, 'service-map-budget-loop');
    assert.equal(await page.locator('#budgetLoopOff').count(), 0);
    assert.equal(await page.locator('#budgetLoopError').count(), 0);
    const rows = page.locator('#loopBudgets tr[data-budget-host]');
    assert.equal(await rows.count(), 2);
    // host-a: its own bounds, the fixture's 3.5 W raised to the 20 W minimum; host-b: the default bounds.
    const a = page.locator('tr[data-budget-host="host-a"]');
    assert.equal(await a.getAttribute('data-budget-watts'), '20');
    assert.equal(await a.getAttribute('data-budget-policy'), 'HYPPO');
    assert.equal(await a.locator('td[data-bounds]').getAttribute('data-bounds'), '20.00–120.00');
    const b = page.locator('tr[data-budget-host="host-b"]');
    assert.equal(await b.getAttribute('data-budget-watts'), '10');
    assert.equal(await b.locator('td[data-bounds]').getAttribute('data-bounds'), '10.00–100.00');
    assert.match(await page.locator('#loopResult').textContent(), /raised to the host minimum 20\.00 W/);
    assert.match(await page.locator('#loopSummary').textContent(), new RegExp('hyppo every 3600 s to ' + process.env.WATTGRAPH_TOPIC));
  });
});

test('the power panel starts from the published bounds and charts measured power against the published budget', async () => {
  await withPage('/', { viewport: { width: 1400, height: 1300 } }, async (page) => {
    await refreshed(page);
    const input = (host, name) => page.locator('tr[data-power-host="' + host + '"] input[name="' + name + '"]').inputValue();
    assert.equal(await input('host-a', 'min'), '20');
    assert.equal(await input('host-a', 'max'), '120');
    assert.equal(await input('host-b', 'min'), '10');
    assert.equal(await input('host-b', 'max'), '100');
    const a = page.locator('#powerCharts .chart[data-chart="power-host-a"]');
    await a.waitFor();
    assert.equal(await a.getAttribute('data-published'), '20');
    assert.equal(await a.getAttribute('data-measured-points'), '2');
    // The class's two cycles (and the loop's start cycle): budgets of 20 W each, one level on the step line.
    assert.match(await a.getAttribute('data-budget-steps'), /^20(,20)+$/);
    assert.match(await a.locator('.u-legend').textContent(), /measured.*published budget/);
    assert.match(await a.textContent(), /\d published budgets in all time, the last 20\.00 W \(HYPPO, .* ago\)/);
    // host-b: nothing measured, but its budgets are charted.
    const b = page.locator('#powerCharts .chart[data-chart="power-host-b"]');
    assert.equal(await b.getAttribute('data-measured-points'), '0');
    assert.match(await b.getAttribute('data-budget-steps'), /^10(,10)+$/);
    await shot(page, 'service-map-budget-loop-power-chart');
  });
});
