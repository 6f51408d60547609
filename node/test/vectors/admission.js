'use strict';
// admission.json: one `Admission` door; tickets held by handle. `on_success` /
// `on_dropped` / `on_ignore` are the permit's `report` with an outcome judged so.

const { g, Held, int, num, unitsOf, building, refusal } = require('./util');
const { limitOptions, withoutLimit } = require('./limits');

const units = unitsOf('admission');
const REPORT = { on_success: 'success', on_dropped: 'overloaded', on_ignore: 'ignored' };
/** No adaptive limit: the API says `null` where core says 2^64 - 1. */
const NO_LIMIT = 2n ** 64n - 1n;

function build(args) {
  const o = withoutLimit(args, (p) => units.get(p));
  const limit = limitOptions(args, 'config.limit.');
  if (limit !== undefined) o.limit = limit;
  return new Case(building(() => new g.Admission(o), { stripPrefix: 'limit.' }));
}

class Case {
  constructor(d) { this.d = d; this.permits = new Held(); }

  run(op, a) {
    const d = this.d;
    switch (op) {
      case 'try_acquire': {
        let p;
        const e = refusal(g.AdmissionRejectedError, () => { p = d.tryAcquire(num(a.priority), a.now); });
        if (e) {
          return {
            admitted: false, reason: e.reason, retry_after: e.retryAt > a.now ? e.retryAt - a.now : 0n,
            retry_after_secs: int(e.retryAfterSecs), in_flight: int(e.inFlight), threshold: int(e.threshold),
          };
        }
        const v = { admitted: true, in_flight: int(p.inFlight) };
        this.permits.keep(a, p, (q) => q.report('ignored'));
        return v;
      }
      case 'on_success':
      case 'on_dropped':
        this.permits.take(a).report(REPORT[op], a.now);
        return null;
      case 'on_ignore': this.permits.take(a).report(REPORT[op]); return null;
      case 'limit': return d.limit === null ? NO_LIMIT : int(d.limit);
      case 'in_flight': return int(d.inFlight);
      case 'threshold': return int(d.threshold(num(a.priority)));
      case 'stats': {
        const s = d.stats();
        return {
          admitted: int(s.admitted), refused_limit_reached: int(s.refusedLimitReached),
          refused_overloaded: int(s.refusedOverloaded), refused_by_priority: s.refusedByPriority.map(int),
          succeeded: int(s.succeeded), dropped: int(s.dropped), ignored: int(s.ignored),
          in_flight: int(s.inFlight), limit: s.limit === undefined ? NO_LIMIT : int(s.limit),
        };
      }
      default: return undefined;
    }
  }
}

module.exports = { build };
