/*
 * What is down, shown as a banner above the map: graph-service not answering, Neo4j unavailable (the service's
 * 503 "Neo4j is unavailable"), or the stream job down or lagging (the hosts' newest metrics window older than
 * STALE_MS). The map keeps what it drew last; while something is down the page refreshes itself every RETRY_MS
 * (the live refresh does so anyway) and the banner goes when the answers are good again.
 */
import { $, ago, el } from './util.js';

export const STALE_MS = 120000; // 12 of the job's default 10 s windows
export const RETRY_MS = 5000;

const time = (ms) => new Date(ms).toLocaleTimeString();

export class Health {
  /** {@code retry()} refreshes the page; {@code live()} tells whether the live refresh runs already. */
  constructor(retry, live) {
    this.retry = retry;
    this.live = live;
    this.down = null; // {what, since}
    this.lastGood = null;
    this.timer = null;
  }

  /** A refresh failed with {@code e} (api()'s Error, or fetch's TypeError when nothing answered). */
  failed(e, now = Date.now()) {
    const what = e.status === 503 && /Neo4j/i.test(e.message) ? 'neo4j'
      : e.status === undefined && e instanceof TypeError ? 'service' : null;
    if (!what) return false; // an ordinary error: the status line says it
    if (!this.down || this.down.what !== what) this.down = { what, since: now };
    const name = what === 'neo4j' ? 'Neo4j is unavailable (graph-service answers 503)'
      : 'graph-service is not answering';
    this.show(what, name + ' since ' + time(this.down.since) + '. '
      + (this.lastGood ? 'The map is the one of ' + time(this.lastGood) + '.' : 'Nothing drawn yet.'));
    return true;
  }

  /** A refresh succeeded; {@code hosts} as /api/v1/hosts gives them. */
  ok(hosts, now = Date.now()) {
    this.down = null;
    this.lastGood = now;
    const ends = hosts.map((h) => h.metricsWindowEndNs).filter((x) => x != null);
    const newestMs = ends.length ? Math.max(...ends) / 1e6 : null; // ns > 2^53 lose sub-µs: irrelevant here
    if (newestMs !== null && now - newestMs > STALE_MS) {
      this.show('job', 'The stream job is down or lagging: the newest metrics window ended at '
        + new Date(newestMs).toLocaleString() + ' (' + ago(now - newestMs) + ' ago); the map shows the graph as of then.');
    } else {
      this.show(null, '');
    }
  }

  show(what, text) {
    const b = $('banner');
    b.textContent = '';
    b.hidden = !what;
    document.body.dataset.down = what || '';
    if (what) b.append(el('strong', { text: what === 'job' ? 'Stale data. ' : 'Down. ' }), text);
    clearTimeout(this.timer);
    if (what && !this.live()) this.timer = setTimeout(this.retry, RETRY_MS);
  }
}
