'use strict';
// bulkhead.json: one `Bulkhead`; permits held by handle.

const { g, Held, int, num, unitsOf, options, building, refusal } = require('./util');

const units = unitsOf('bulkhead');

function build(args) {
  return new Case(building(() => new g.Bulkhead(options(args, (p) => units.get(p)))));
}

class Case {
  constructor(b) { this.b = b; this.permits = new Held(); }

  run(op, a) {
    const b = this.b;
    switch (op) {
      case 'try_acquire': {
        let p;
        const e = refusal(g.BulkheadFullError, () => { p = b.tryAcquire(); });
        if (e) return { acquired: false, in_flight: int(e.inFlight), max_concurrent: int(e.maxConcurrent) };
        this.permits.keep(a, p, (q) => q.release());
        return { acquired: true };
      }
      case 'release': this.permits.take(a).release(); return null;
      case 'in_flight': return int(b.inFlight);
      case 'available': return int(b.available);
      case 'stats': {
        const s = b.stats();
        return { acquired: int(s.acquired), rejected: int(s.rejected), released: int(s.released), in_flight: int(s.inFlight) };
      }
      case 'from_littles_law':
        try {
          return { max_concurrent: int(g.Bulkhead.fromLittlesLaw(num(a.rate_per_sec), a.p99, num(a.headroom)).maxConcurrent) };
        } catch (e) {
          if (!(e instanceof RangeError) || typeof e.kind !== 'string') throw e;
          const field = { ratePerSec: 'rate_per_sec', p99: 'p99', headroom: 'headroom', maxConcurrent: 'max_concurrent' }[e.option];
          return { error: { field: field ?? e.option, kind: e.kind } };
        }
      default: return undefined;
    }
  }
}

module.exports = { build };
