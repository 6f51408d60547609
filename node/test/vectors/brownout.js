'use strict';
// brownout.json: one `Brownout`, or with `operations` a `BrownoutTable` whose operations
// are registered in order under their keys (bigints).

const { g, Unsupported, int, unitsOf, options, building } = require('./util');

const units = unitsOf('brownout');

const statsOf = (s) => (s === null ? null : { full: int(s.full), degraded: int(s.degraded), errors: int(s.errors), proceeded: int(s.proceeded) });

function build(args) {
  if (args.capacity === undefined) return new One(building(() => new g.Brownout(options(args, (p) => units.get(p)))));
  const capacity = Number(args.capacity);
  const t = new g.BrownoutTable({ capacity });
  if (t.capacity !== capacity) throw new Unsupported(`a table of ${capacity} (the Node API rounds up to ${t.capacity})`);
  for (let i = 0; args[`config.operations[${i}].key`] !== undefined; i++) {
    const prefix = `config.operations[${i}].`;
    const o = options(Object.fromEntries(Object.entries(args).filter(([k]) => k.startsWith(prefix) && k !== `${prefix}key`)), (p) => units.get(p), prefix);
    t.register(args[`${prefix}key`], o);
  }
  return new Table(t);
}

class One {
  constructor(b) { this.b = b; }

  run(op, a) {
    const b = this.b;
    switch (op) {
      case 'on_refusal': return b.onRefusal(a.kind);
      case 'decide': return b.decide(a.kind);
      case 'on_full': b.onFull(); return null;
      case 'stats': return statsOf(b.stats());
      case 'operation_key': return g.Brownout.operationKey(a.name);
      default: return undefined;
    }
  }
}

class Table {
  constructor(t) { this.t = t; }

  run(op, a) {
    const t = this.t;
    switch (op) {
      case 'on_refusal': return t.onRefusal(a.key, a.kind);
      case 'on_full': return t.onFull(a.key);
      case 'stats': return statsOf(t.stats(a.key));
      case 'totals': return statsOf(t.totals());
      case 'unknown': return int(t.unknown);
      case 'register':
        try {
          return BigInt(t.register(a.key, options(a, (p) => units.get(p))));
        } catch (e) {
          if (e instanceof RangeError && (e.reason === 'duplicate' || e.reason === 'full')) return { error: e.reason };
          if ((e instanceof RangeError || e instanceof TypeError) && typeof e.kind === 'string') {
            return { error: 'config', field: e.option.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), kind: e.kind };
          }
          throw e;
        }
      case 'operation_key': return g.Brownout.operationKey(a.name);
      default: return undefined;
    }
  }
}

module.exports = { build };
