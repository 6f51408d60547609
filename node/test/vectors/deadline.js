'use strict';
// deadline.json: `Deadline` and the wire forms. The case's attempt settings
// (`attempt_timeout`, `margin`) are what `attemptBudget` takes; `new` checks them.

const { g, ns, unitsOf, options, building } = require('./util');

const units = unitsOf('deadline');
const DEFAULTS = Object.fromEntries(g.configSchema('deadline').map((f) => [f.name, BigInt(Math.round(f.default * 1e6))]));

function build(args) {
  const o = { ...DEFAULTS, ...options(args, (p) => units.get(p)) };
  // The settings are checked by the call that takes them.
  building(() => g.Deadline.none().attemptBudget(o.attemptTimeout, o.margin, 0n));
  return new Case(o.attemptTimeout, o.margin);
}

/** A deadline argument: an instant, or null for none. */
const dl = (v) => (v === null || v === undefined ? g.Deadline.none() : g.Deadline.at(v));
/** A deadline result: its instant, or null for none. */
const value = (d) => d.expiresAt;

/** `{ ok: v }` or `{ error: reason }` of a parse. */
function parsed(f, v) {
  try {
    return { ok: v(f()) };
  } catch (e) {
    if (e instanceof RangeError && typeof e.reason === 'string') return { error: e.reason };
    throw e;
  }
}

class Case {
  constructor(attemptTimeout, margin) { this.t = attemptTimeout; this.m = margin; }

  run(op, a) {
    switch (op) {
      case 'after': return value(g.Deadline.after(a.timeout, a.now));
      case 'time_left': {
        const d = dl(a.deadline);
        return d.isNone ? null : ns(d.timeLeftMs(a.now));
      }
      case 'is_expired': return dl(a.deadline).isExpired(a.now);
      case 'min': return value(dl(a.a).min(dl(a.b)));
      case 'attempt_budget': {
        const b = dl(a.deadline).attemptBudget(this.t, this.m, a.now);
        if (b.decision === 'start') return { decision: 'start', budget: ns(b.budgetMs) };
        if (b.decision === 'expired') return { decision: 'expired' };
        return { decision: b.decision, left: b.leftMs === Infinity ? null : ns(b.leftMs) };
      }
      case 'encode_grpc_timeout': return g.encodeGrpcTimeout(a.timeout);
      case 'encode_millis': return g.encodeMillis(a.timeout);
      case 'to_grpc_timeout': return dl(a.deadline).toGrpcTimeout(a.now);
      case 'to_millis': return dl(a.deadline).toMillis(a.now);
      case 'parse_grpc_timeout': return parsed(() => g.parseGrpcTimeout(a.value), ns);
      case 'parse_millis': return parsed(() => g.parseMillis(a.value), ns);
      case 'from_grpc_timeout': return parsed(() => g.Deadline.fromGrpcTimeout(a.value, a.now), value);
      case 'from_millis': return parsed(() => g.Deadline.fromMillis(a.value, a.now), value);
      default: return undefined;
    }
  }
}

module.exports = { build };
