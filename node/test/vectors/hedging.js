'use strict';
// hedging.json: a `Hedging` policy; a scripted gate ("allow" / "deny") is a function
// answering every hedge so.

const { g, ns, int, num, unitsOf, options, building } = require('./util');

const units = unitsOf('hedging');

function build(args) {
  return new Case(building(() => new g.Hedging(options(args, (p) => units.get(p)))));
}

class Case {
  constructor(h) { this.h = h; }

  run(op, a) {
    const h = this.h;
    switch (op) {
      case 'record_latency': h.recordLatency(a.latency, a.now); return null;
      case 'hedge_delay': return ns(h.hedgeDelayMs(a.now));
      case 'should_hedge': {
        const gate = a.gate === undefined ? null : (a.gate === 'allow' ? () => true : () => false);
        const d = h.shouldHedge(a.request_started, num(a.hedges_sent), a.idempotent, gate, a.now);
        if (d.decision === 'wait_until') return { decision: d.decision, at: d.at };
        if (d.decision === 'never') return { decision: d.decision, reason: d.reason };
        return { decision: d.decision };
      }
      case 'stats': {
        const s = h.stats();
        return {
          hedges: int(s.hedges), deferred: int(s.deferred), not_idempotent: int(s.notIdempotent),
          limit_reached: int(s.limitReached), no_latency_data: int(s.noLatencyData), budget_exhausted: int(s.budgetExhausted),
        };
      }
      default: return undefined;
    }
  }
}

module.exports = { build };
