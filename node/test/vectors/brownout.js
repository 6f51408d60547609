'use strict';
// brownout.json: one `Brownout`. A table of operations (`operations`) is not in the Node
// API: unsupported.

const { g, Unsupported, int, unitsOf, options, building } = require('./util');

const units = unitsOf('brownout');

function build(args) {
  if (args.capacity !== undefined) throw new Unsupported('a BrownoutTable (one decision per operation) is not in the Node API');
  return new Case(building(() => new g.Brownout(options(args, (p) => units.get(p)))));
}

class Case {
  constructor(b) { this.b = b; }

  run(op, a) {
    const b = this.b;
    switch (op) {
      case 'on_refusal': return b.onRefusal(a.kind);
      case 'decide': return b.decide(a.kind);
      case 'on_full': b.onFull(); return null;
      case 'stats': {
        const s = b.stats();
        return { full: int(s.full), degraded: int(s.degraded), errors: int(s.errors), proceeded: int(s.proceeded) };
      }
      case 'operation_key': return g.Brownout.operationKey(a.name);
      default: return undefined;
    }
  }
}

module.exports = { build };
