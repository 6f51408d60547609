'use strict';
// circuit_breaker.json: a `CircuitBreaker` of 128 window cells (`capacity`), or with
// `keyed_slots` a `KeyedBreakers` whose steps carry `key` (a 64-bit key: a bigint).
// `on_success` / `on_failure` / `on_ignore` are the permit's `report` with an outcome the
// call contract judges so ('success', 'other_transient', 'ignored').

const { g, Unsupported, Held, ns, int, unitsOf, options, building, refusal } = require('./util');

const units = unitsOf('circuit_breaker');
const REPORT = { on_success: 'success', on_failure: 'other_transient', on_ignore: 'ignored' };

function build(args) {
  const o = options(args, (p) => units.get(p));
  if (args.keyed_slots !== undefined) {
    const slots = Number(args.keyed_slots);
    const set = building(() => new g.KeyedBreakers({ ...o, slots }));
    if (set.config.slots !== slots) throw new Unsupported(`a set of ${slots} slots (the Node API rounds up to ${set.config.slots})`);
    return new Case(null, set);
  }
  const cells = Number(args.capacity);
  const b = building(() => new g.CircuitBreaker({ ...o, capacity: cells }));
  if (b.capacity !== cells) throw new Unsupported(`a breaker of exactly ${cells} cells (the Node API grows the cells to fit the window: ${b.capacity})`);
  return new Case(b, null);
}

const STATS = ['successes', 'failures', 'slowCalls', 'probesAdmitted', 'probeSuccesses', 'probeFailures',
  'ignored', 'discarded', 'rejectedOpen', 'rejectedHalfOpen', 'closedToOpen', 'openToHalfOpen',
  'halfOpenToClosed', 'halfOpenToOpen'];
const snakeKey = (k) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

class Case {
  constructor(breaker, set) { this.b = breaker; this.set = set; this.permits = new Held(); this.unreported = []; }

  run(op, a) {
    const { b, set } = this;
    const key = a.key;
    switch (op) {
      case 'try_acquire': {
        let p;
        const e = refusal(g.BreakerOpenError, () => { p = set ? set.tryAcquire(key, a.now) : b.tryAcquire(a.now); });
        if (e) return { rejected: e.reason, retry_at: e.retryAt };
        const v = p.isProbe
          ? { admitted: 'probe', generation: BigInt(p.generation), probe_timeout: ns(p.probeTimeoutMs) }
          : { admitted: 'call', generation: BigInt(p.generation) };
        // An admitted call the file does not name is dropped unreported. A Node permit is
        // given back without a verdict when it is collected, at a time of the collector's
        // choosing: the case keeps it, unreported, until the case is over.
        this.permits.keep(a, p, (q) => this.unreported.push(q));
        return v;
      }
      case 'on_success':
      case 'on_failure': {
        const p = this.permits.take(a);
        return p.report(REPORT[op], a.now);
      }
      case 'on_ignore': {
        this.permits.take(a).report(REPORT[op]);
        return null;
      }
      case 'state': return set ? set.state(key, a.now) : b.state(a.now);
      case 'status': {
        const s = set ? set.status(key) : b.status();
        if (s === null) throw new Error(`no breaker for key ${key}`);
        return {
          state: s.state, generation: BigInt(s.generation), probes_issued: BigInt(s.probesIssued),
          probes_passed: BigInt(s.probesPassed), consecutive_opens: BigInt(s.consecutiveOpens), half_open_at: s.halfOpenAt,
        };
      }
      case 'window_counts': {
        const w = set ? set.windowCounts(key, a.now) : b.windowCounts(a.now);
        return { calls: int(w.calls), failures: int(w.failures), slow: int(w.slow) };
      }
      case 'stats': {
        const s = set ? set.breakerStats(key) : b.stats();
        if (s === null) throw new Error(`no breaker for key ${key}`);
        return Object.fromEntries(STATS.map((k) => [snakeKey(k), int(s[k])]));
      }
      case 'get_or_insert': return set.insert(key) ? 'ok' : 'full';
      case 'len': return int(set.stats().entries);
      case 'key_of': return g.KeyedBreakers.keyOf(String(a.bytes));
      default: return undefined;
    }
  }
}

module.exports = { build };
