/*
 * Accessibility basics over the fixture graph (ServiceMapBrowserTest): axe-core (package.json's pinned dev
 * dependency, evaluated in the page, never served by it) on the loaded page with the detail, the charts and the
 * placement and power results open, failing on any serious or critical violation; and the controls operated with
 * the keyboard alone.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clickOn, fillBounds, FIXTURE_BOUNDS, refreshed, seriousViolations, shot, withPage } from './lib.mjs';

const NGINX = 'host-a/100/1000', PG = 'host-b/300/3000';

test('axe-core finds no serious or critical violation with the panels open', async () => {
  await withPage('/', { viewport: { width: 1400, height: 1300 } }, async (page) => {
    await refreshed(page);
    await clickOn(page, NGINX);
    await page.waitForSelector('#detailTable');
    await page.click('#placementForm button[type=submit]');
    await fillBounds(page, FIXTURE_BOUNDS);
    await page.click('#powerForm button[type=submit]');
    await page.waitForSelector('#powerBudgets');
    await page.waitForFunction(() => !/computing/.test(document.getElementById('placementResult').textContent));
    await page.fill('#search', 'postgres');
    await page.waitForSelector('#searchResults:not([hidden])');
    await shot(page, 'service-map-a11y');
    assert.deepEqual(await seriousViolations(page), []);
  });
});

/** Presses Tab until {@code selector} has the focus (at most {@code max} times); how many presses it took. */
async function tabTo(page, selector, max = 80) {
  for (let i = 1; i <= max; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate((s) => document.activeElement && document.activeElement.matches(s), selector)) return i;
  }
  assert.fail('Tab never reached ' + selector);
}

test('the keyboard reaches and operates the search, the level, the time range and the panels', async () => {
  await withPage('/', { viewport: { width: 1400, height: 1300 } }, async (page) => {
    await refreshed(page);
    // Level: focus by Tab, change with the arrow keys; the map is drawn again at the new level.
    await tabTo(page, '#level');
    let n = Number(await page.evaluate(() => document.body.dataset.refreshes));
    await page.keyboard.press('ArrowDown'); // process -> container
    await page.waitForFunction((k) => Number(document.body.dataset.refreshes) > k, n);
    assert.equal(await page.inputValue('#level'), 'container');
    assert.equal(await page.getAttribute('#map', 'data-level'), 'container');
    // Time range: the same.
    await tabTo(page, '#range');
    n = Number(await page.evaluate(() => document.body.dataset.refreshes));
    await page.keyboard.press('ArrowDown'); // all -> last 5 min
    await page.waitForFunction((k) => Number(document.body.dataset.refreshes) > k, n);
    assert.equal(await page.inputValue('#range'), '5m');
    await page.keyboard.press('End'); // custom: its fields and Apply are next in the Tab order
    await page.waitForSelector('#customRange:not([hidden])');
    await tabTo(page, '#rangeApply');
    n = Number(await page.evaluate(() => document.body.dataset.refreshes));
    await page.keyboard.press('Enter');
    await page.waitForFunction((k) => Number(document.body.dataset.refreshes) > k, n);
    assert.match(await page.locator('#mapSummary').textContent(), / – /);
    // Back to all time and the process level, still by keyboard.
    await page.focus('#range');
    n = Number(await page.evaluate(() => document.body.dataset.refreshes));
    await page.keyboard.press('Home');
    await page.waitForFunction((k) => Number(document.body.dataset.refreshes) > k, n);
    await page.focus('#level');
    n = Number(await page.evaluate(() => document.body.dataset.refreshes));
    await page.keyboard.press('Home');
    await page.waitForFunction((k) => Number(document.body.dataset.refreshes) > k, n);
    // Search: typed, a hit picked with Enter opens its detail.
    await tabTo(page, '#search');
    await page.keyboard.type('postgres');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#detailTable[data-detail="' + PG + '"]');
    // A search hit is a button reachable by Tab and operated with Space.
    await page.focus('#search');
    await page.keyboard.press('Control+A');
    await page.keyboard.type('nginx');
    await tabTo(page, '#searchResults button', 3);
    await page.keyboard.press('Space');
    await page.waitForSelector('#detailTable[data-detail="' + NGINX + '"]');
    // Focus (Enter) and Show all (Space) on the selection.
    await tabTo(page, '#focus');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => window.serviceMap.cy.nodes().filter((x) => x.pstyle('display').value === 'none').length > 0);
    await tabTo(page, '#unfocus', 3);
    await page.keyboard.press('Space');
    await page.waitForFunction(() => window.serviceMap.cy.nodes().filter((x) => x.pstyle('display').value === 'none').length === 0);
    // The panels' buttons: placement with Enter, power with Space.
    await tabTo(page, '#placementForm button[type=submit]');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => /kubectl patch deployment|moves/.test(document.getElementById('placementResult').textContent));
    await fillBounds(page, FIXTURE_BOUNDS);
    await tabTo(page, '#powerForm button[type=submit]');
    await page.keyboard.press('Space');
    await page.waitForSelector('#powerBudgets');
    // Every focused control shows where the focus is (an outline or a box shadow).
    const unmarked = await page.evaluate(() => {
      const out = [];
      for (const e of document.querySelectorAll('header select, header input, header button, .toolbar button, .toolbar input, .toolbar select, form.panel button')) {
        if (!e.checkVisibility() || e.disabled) continue;
        e.focus();
        const s = getComputedStyle(e);
        if ((s.outlineStyle === 'none' || parseFloat(s.outlineWidth) === 0) && s.boxShadow === 'none') out.push(e.id || e.textContent);
      }
      return out;
    });
    assert.deepEqual(unmarked, []);
    await shot(page, 'service-map-keyboard');
  });
});
