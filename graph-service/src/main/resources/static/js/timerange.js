/*
 * The time range: all, the last 5 min / 1 h / 24 h, or custom (two local date-times). As Unix-ns strings for
 * the API's fromNs/toNs (BigInt: ns since 1970 exceed a double's 2^53). A relative range starts at a "now"
 * rounded down to max(30 s, range/30), so that successive refreshes ask for the same filter and the service's
 * graph cache answers them.
 */
import { $ } from './util.js';

const RELATIVE_S = { '5m': 300, '1h': 3600, '24h': 86400 };

const ns = (ms) => (BigInt(Math.round(ms)) * 1000000n).toString();

export class TimeRange {
  constructor(onChange) {
    this.onChange = onChange;
    const show = () => { $('customRange').hidden = $('range').value !== 'custom'; };
    $('range').addEventListener('change', () => {
      show();
      if ($('range').value === 'custom' && !$('rangeFrom').value) this.prefillCustom();
      if ($('range').value !== 'custom') this.onChange();
    });
    $('rangeApply').addEventListener('click', (e) => { e.preventDefault(); this.onChange(); });
    show();
  }

  /** The custom fields start as the last hour, in local time. */
  prefillCustom() {
    const local = (ms) => {
      const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60000);
      return d.toISOString().slice(0, 19);
    };
    const now = Date.now();
    $('rangeFrom').value = local(now - 3600000);
    $('rangeTo').value = local(now);
  }

  set(value) {
    if (value && [...$('range').options].some((o) => o.value === value)) $('range').value = value;
    $('customRange').hidden = $('range').value !== 'custom';
  }

  /** {fromNs, toNs} (strings or null) for the chosen range; throws an Error naming a bad custom field. */
  bounds() {
    const v = $('range').value;
    if (v === 'all') return { fromNs: null, toNs: null };
    if (RELATIVE_S[v]) {
      const range = RELATIVE_S[v] * 1000, step = Math.max(30000, range / 30);
      return { fromNs: ns(Math.floor(Date.now() / step) * step - range), toNs: null };
    }
    const parse = (id, name) => {
      const raw = $(id).value;
      if (!raw) return null;
      const ms = new Date(raw).getTime();
      if (!Number.isFinite(ms)) throw new Error('time range: "' + raw + '" is not a date and time (' + name + ')');
      if (ms < 0) throw new Error('time range: ' + name + ' is before 1970');
      return ms;
    };
    const from = parse('rangeFrom', 'from'), to = parse('rangeTo', 'to');
    if (from !== null && to !== null && from > to) throw new Error('time range: from is after to');
    return { fromNs: from === null ? null : ns(from), toNs: to === null ? null : ns(to + 999) };
  }

  describe() {
    const v = $('range').value;
    if (v === 'all') return 'all time';
    if (RELATIVE_S[v]) return 'last ' + $('range').selectedOptions[0].textContent.replace(/^last /, '');
    return ($('rangeFrom').value || '…').replace('T', ' ') + ' – ' + ($('rangeTo').value || 'now').replace('T', ' ');
  }
}
