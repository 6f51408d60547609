'use strict';
// limiter.json: one `Limiter`; permits held by handle. `on_success` / `on_dropped` /
// `on_ignore` are the permit's `report` with an outcome the call contract judges so.

const { g, Held, ns, int, num, unitsOf, building, refusal } = require('./util');
const { limitOptions, withoutLimit } = require('./limits');

const units = unitsOf('limiter');
const REPORT = { on_success: 'success', on_dropped: 'overloaded', on_ignore: 'ignored' };

function build(args) {
  const o = withoutLimit(args, (p) => units.get(p));
  const limit = limitOptions(args, 'config.limit.');
  if (limit !== undefined) o.limit = limit;
  return new Case(building(() => new g.Limiter(o), { stripPrefix: 'limit.' }));
}

class Case {
  constructor(l) { this.l = l; this.permits = new Held(); }

  run(op, a) {
    const l = this.l;
    switch (op) {
      case 'try_acquire': {
        let p;
        const e = refusal(g.LimitExceededError, () => { p = l.tryAcquire(num(a.priority), a.now); });
        if (e) {
          return {
            admitted: false, reason: e.reason, retry_after: e.retryAt - a.now > 0n ? e.retryAt - a.now : 0n,
            threshold: int(e.threshold), in_flight: int(e.inFlight),
          };
        }
        const v = { admitted: true, in_flight: int(p.inFlight), threshold: int(p.threshold) };
        this.permits.keep(a, p, (q) => q.report('ignored'));
        return v;
      }
      case 'on_success':
      case 'on_dropped':
        this.permits.take(a).report(REPORT[op], a.now);
        return null;
      case 'on_ignore': this.permits.take(a).report(REPORT[op]); return null;
      case 'limit': return int(l.limit);
      case 'in_flight': return int(l.inFlight);
      case 'threshold': return int(l.threshold(num(a.priority)));
      case 'retry_after': return ns(l.retryAfterMs);
      case 'stats': {
        const s = l.stats();
        return {
          acquired: int(s.acquired), rejected_limit_reached: int(s.rejectedLimitReached),
          rejected_partition_cap: int(s.rejectedPartitionCap), rejected_reserved: int(s.rejectedReserved),
          rejected_by_priority: s.rejectedByPriority.map(int), succeeded: int(s.succeeded), dropped: int(s.dropped),
          ignored: int(s.ignored), windows: int(s.windows), limit_changes: int(s.limitChanges),
          folds_skipped: int(s.foldsSkipped), limit: int(s.limit), in_flight: int(s.inFlight),
        };
      }
      default: return undefined;
    }
  }
}

module.exports = { build };
