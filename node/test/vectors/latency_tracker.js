'use strict';
// latency_tracker.json: a `LatencyTracker`. A quantile outside 0..=1 (or NaN), which core
// answers with no value, is refused by the Node API with a RangeError naming `q`: replied
// as no value.

const { g, ns, int, num, unitsOf, options, building } = require('./util');

const units = unitsOf('latency_tracker');

function build(args) {
  return new Case(building(() => new g.LatencyTracker(options(args, (p) => units.get(p)))));
}

class Case {
  constructor(t) { this.t = t; }

  run(op, a) {
    const t = this.t;
    switch (op) {
      case 'record': t.record(a.latency, a.now); return null;
      case 'count': return int(t.count(a.now));
      case 'quantile':
        try {
          return ns(t.quantileMs(num(a.q), a.now));
        } catch (e) {
          if (e instanceof RangeError && e.option === 'q') return null;
          throw e;
        }
      case 'summary': {
        const s = t.summary(a.now);
        return { count: int(s.count), p50: ns(s.p50Ms), p95: ns(s.p95Ms), p99: ns(s.p99Ms), p999: ns(s.p999Ms), max: ns(s.maxMs) };
      }
      case 'propose_timeout': return ns(t.proposeTimeoutMs(a.now));
      case 'false_timeout_rate': return t.falseTimeoutRate(a.timeout, a.now);
      case 'stats': {
        const s = t.stats();
        return { recorded: int(s.recorded), saturated: int(s.saturated), stale: int(s.stale) };
      }
      default: return undefined;
    }
  }
}

module.exports = { build };
