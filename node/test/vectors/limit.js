'use strict';
// limit.json: a `Limit` (the algorithm on its own) fed one sample at a time.

const { g, U, ns, int, building } = require('./util');
const { limitOptions } = require('./limits');

function build(args) {
  return new Case(building(() => new g.Limit(limitOptions(args, 'config.'))));
}

class Case {
  constructor(l) { this.l = l; }

  run(op, a) {
    const l = this.l;
    switch (op) {
      case 'update': return int(l.update(a.rtt, Number(a.in_flight), a.dropped, a.now));
      case 'limit': return int(l.limit);
      case 'estimate': return l.estimate;
      case 'min_rtt': return ns(l.minRttMs);
      // The API gives the long-term RTT average in ms: the float the file expects (in ns)
      // cannot be recovered bit for bit from it.
      case 'long_rtt': return U;
      default: return undefined;
    }
  }
}

module.exports = { build };
