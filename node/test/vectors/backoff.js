'use strict';
// backoff.json: a `Backoff` seeded with the case's seed (its `delay` draws from it, as the
// file's generator). A delay from given random bits and the generator itself are not in
// the Node API (`delay_from_bits`, `rng_next_u64`: unsupported).

const { g, Unsupported, ns, num, unitsOf, options, building } = require('./util');

const units = unitsOf('backoff');

function build(args) {
  const o = options(args, (p) => units.get(p));
  o.seed = args.seed;
  return new Case(building(() => new g.Backoff(o)));
}

class Case {
  constructor(b) { this.b = b; }

  run(op, a) {
    const b = this.b;
    switch (op) {
      case 'ceiling': return ns(b.ceilingMs(num(a.retry)));
      case 'max_delay': return ns(b.maxDelayMs(num(a.retry)));
      case 'delay': return ns(b.delayMs(num(a.retry), a.prev));
      case 'delay_from_bits': throw new Unsupported('a delay from given random bits is not in the Node API');
      case 'rng_next_u64': throw new Unsupported("the backoff's jitter generator is not in the Node API");
      // FNV-1a 64 of the id: the key every binding computes for a name.
      case 'fnv1a64': return g.KeyedBreakers.keyOf(a.id);
      case 'stable_offset': return ns(g.stableOffsetMs(a.id, a.period));
      case 'next_stable_run': return g.nextStableRun(a.id, a.period, a.now);
      default: return undefined;
    }
  }
}

module.exports = { build };
