'use strict';
// backoff.json: a `Backoff` seeded with the case's seed (its `delay` draws from it, as the
// file's generator; `nextU64` reads the generator, `delayFromBitsMs` replays a word).

const { g, ns, num, unitsOf, options, building } = require('./util');

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
      case 'delay_from_bits': return ns(b.delayFromBitsMs(num(a.retry), a.bits, a.prev));
      case 'rng_next_u64': return b.nextU64();
      // FNV-1a 64 of the id: the key every binding computes for a name.
      case 'fnv1a64': return g.KeyedBreakers.keyOf(a.id);
      case 'stable_offset': return ns(g.stableOffsetMs(a.id, a.period));
      case 'next_stable_run': return g.nextStableRun(a.id, a.period, a.now);
      default: return undefined;
    }
  }
}

module.exports = { build };
