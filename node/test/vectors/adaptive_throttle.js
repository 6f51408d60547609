'use strict';
// adaptive_throttle.json: an `AdaptiveThrottle` drawing from its own generator (its `seed`
// option). `on_accepted` / `on_rejected_by_backend` are its `report` with an outcome the
// call contract judges so ('success', 'overloaded').

const { g, int, unitsOf, options, building } = require('./util');

const units = unitsOf('adaptive_throttle');

function build(args) {
  return new Case(building(() => new g.AdaptiveThrottle(options(args, (p) => units.get(p)))));
}

class Case {
  constructor(t) { this.t = t; }

  run(op, a) {
    const t = this.t;
    switch (op) {
      case 'should_reject': return t.shouldReject(a.now);
      case 'on_accepted': t.report('success', a.now); return null;
      case 'on_rejected_by_backend': t.report('overloaded', a.now); return null;
      case 'reject_probability': return t.rejectProbability(a.now);
      case 'window': {
        const w = t.window(a.now);
        return { requests: int(w.requests), accepts: int(w.accepts) };
      }
      case 'stats': {
        const s = t.stats();
        return { admitted: int(s.admitted), throttled: int(s.throttled), accepted: int(s.accepted), rejected_by_backend: int(s.rejectedByBackend), stale: int(s.stale) };
      }
      default: return undefined;
    }
  }
}

module.exports = { build };
