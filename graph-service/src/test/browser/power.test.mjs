/*
 * The power panel over the fixture graph (ServiceMapBrowserTest, budget loop off): inputs from what was measured,
 * empty with a note where nothing was, typed bounds, and budgets computed from the figures as edited.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fillBounds, FIXTURE_BOUNDS, refreshed, shot, withPage } from './lib.mjs';

/** Input value and note of {@code field} of {@code host}'s row. */
async function field(page, host, name) {
  const td = page.locator('tr[data-power-host="' + host + '"] td[data-field="' + name + '"]');
  const input = td.locator('input');
  return { value: (await input.count()) ? await input.inputValue() : (await td.textContent()),
    note: await td.locator('.note').textContent() };
}

test('the power panel starts from the hosts\' measured figures, empty with a note where none was measured', async () => {
  await withPage('/', { viewport: { width: 1400, height: 1300 } }, async (page) => {
    await refreshed(page);
    await page.waitForSelector('#powerInputs tr[data-power-host="host-b"]');
    await shot(page, 'service-map-power-inputs');
    // host-a: its latest window (GraphFixture: 35 W, 2.5 cores, ending at 130 ns).
    const a = await field(page, 'host-a', 'current');
    assert.equal(a.value, '35');
    assert.match(a.note, /^measured, window ending 01\/01\/1970/);
    assert.match((await field(page, 'host-a', 'cpu')).value, /^2\.50/);
    // host-b has no history, and neither host an idle power or a configured bound: empty fields, each saying so.
    assert.deepEqual(await field(page, 'host-b', 'current'), { value: '', note: 'no measured power for this host' });
    assert.match((await field(page, 'host-b', 'cpu')).note, /no measured CPU/);
    for (const host of ['host-a', 'host-b']) {
      assert.deepEqual(await field(page, host, 'idle'), { value: '', note: 'no measured idle power (empty counts 0 W)' });
      assert.equal((await field(page, host, 'actionable')).value, '');
      assert.deepEqual(await field(page, host, 'min'), { value: '', note: 'no configured bound: type one' });
      assert.equal((await field(page, host, 'max')).value, '');
    }
    // Without bounds the panel refuses, naming the host and the field.
    await page.click('#powerForm button[type=submit]');
    assert.equal(await page.locator('#powerInputError').textContent(), 'host-a: min W is empty: type the host\'s bound');
    // Bounds typed, host-a's power edited: the request carries the figures as shown, nothing else.
    await fillBounds(page, FIXTURE_BOUNDS);
    await page.fill('tr[data-power-host="host-a"] input[name="current"]', '50');
    const [request] = await Promise.all([
      page.waitForRequest((r) => r.url().endsWith('/api/v1/power/budgets') && r.method() === 'POST'),
      page.click('#powerForm button[type=submit]')]);
    await page.waitForSelector('#powerBudgets');
    assert.deepEqual(request.postDataJSON().hosts, [
      { host: 'host-a', currentPowerW: 50, actionablePowerW: null, idlePowerW: null, minW: 20, maxW: 120 },
      { host: 'host-b', currentPowerW: null, actionablePowerW: null, idlePowerW: null, minW: 10, maxW: 100 }]);
    assert.equal(await page.locator('#powerBudgets tr').count(), 3);
    // A refresh keeps what was typed.
    await page.click('#refresh');
    await refreshed(page, 2);
    assert.equal((await field(page, 'host-a', 'current')).value, '50');
    assert.equal((await field(page, 'host-b', 'min')).value, '10');
    await shot(page, 'service-map-power-computed');
  });
});

test('the power panel charts each host\'s measured power over the time range, with the budget computed there', async () => {
  await withPage('/', { viewport: { width: 1400, height: 1300 } }, async (page) => {
    await refreshed(page);
    // host-a: its two windows (30 and 35 W); no published budget (the loop is off); host-b: nothing measured.
    const a = page.locator('#powerCharts .chart[data-chart="power-host-a"]');
    await a.waitFor();
    assert.equal(await a.getAttribute('data-points'), '2');
    assert.equal(await a.locator('canvas').count(), 1);
    assert.equal(await a.getAttribute('data-published'), null);
    assert.match(await a.textContent(), /no budget published for host-a in all time \(budget loop off/);
    assert.equal(await page.locator('#powerCharts [data-power-chart-none="host-b"]').textContent(),
      'host-b: no measured power in all time.');
    // A computed budget is drawn against the measurements (HyPPO: host-a raised to its 20 W minimum).
    await fillBounds(page, FIXTURE_BOUNDS);
    await page.click('#powerForm button[type=submit]');
    await page.waitForSelector('#powerCharts .chart[data-chart="power-host-a"][data-computed]');
    assert.equal(await a.getAttribute('data-computed'), '20');
    assert.match(await a.locator('.u-legend').textContent(), /computed budget/);
    await shot(page, 'service-map-power-chart');
    // The time range filters the windows: none in the last 5 minutes.
    await page.selectOption('#range', '5m');
    await page.waitForSelector('#powerCharts [data-power-chart-none="host-a"]');
    assert.equal(await page.locator('#powerCharts .chart').count(), 0);
  });
});
