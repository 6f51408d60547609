'use strict';
// queue_discipline.json: a `QueueDiscipline` of at least `capacity` slots (the Node API
// sizes the queue from its `capacity` option: the slot count itself is not shown).

const { g, ns, int, num, unitsOf, options, building } = require('./util');

const units = unitsOf('queue_discipline');

function build(args) {
  return new Case(building(() => new g.QueueDiscipline(options(args, (p) => units.get(p)))));
}

const drops = (q) => q.dropped().map((d) => ({ id: int(d.id), reason: d.reason }));

class Case {
  constructor(q) { this.q = q; }

  run(op, a) {
    const q = this.q;
    switch (op) {
      case 'push':
        try {
          q.push(a.id, num(a.priority), a.deadline ?? null, a.now);
          return true;
        } catch (e) {
          if (e instanceof g.QueueFullError) return false;
          throw e;
        }
      case 'pop': {
        const s = q.pop(a.now);
        return { served: s === null ? null : { id: int(s.id), order: s.order }, dropped: drops(q) };
      }
      case 'expire': q.expire(a.now); return { dropped: drops(q) };
      case 'remove': return q.remove(a.id);
      case 'len': return int(q.length);
      case 'len_by_priority': return q.lengthByPriority().map(int);
      case 'oldest_age': return ns(q.oldestAgeMs(a.now));
      case 'is_standing': return q.isStanding(a.now);
      case 'stats': {
        const s = q.stats();
        return {
          enqueued: int(s.enqueued), served_fifo: int(s.servedFifo), served_lifo: int(s.servedLifo),
          dropped_age_limit: int(s.droppedAgeLimit), dropped_deadline: int(s.droppedDeadline),
          cancelled: int(s.cancelled), rejected_full: int(s.rejectedFull),
        };
      }
      default: return undefined;
    }
  }
}

module.exports = { build };
