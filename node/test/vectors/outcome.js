'use strict';
// outcome.json: the call contract's outcomes (`OUTCOMES`, by number) and what each guard
// does with one (`outcomeVerdicts`).

const { g } = require('./util');

function build() { return new Case(); }

class Case {
  run(op, a) {
    switch (op) {
      case 'verdicts': {
        const v = g.outcomeVerdicts(a.outcome);
        return {
          number: BigInt(v.number), breaker_call: v.breakerCall, breaker_probe: v.breakerProbe, bulkhead: v.bulkhead,
          limiter: v.limiter, retry_budget: v.retryBudget, adaptive_throttle: v.adaptiveThrottle, latency: v.latency,
          retry: 'retry' in v.retry ? { retry: v.retry.retry } : { give_up: v.retry.giveUp }, brownout: v.brownout,
        };
      }
      case 'from_number': {
        const n = a.number;
        return n >= 0n && n < BigInt(g.OUTCOMES.length) ? g.OUTCOMES[Number(n)] : null;
      }
      case 'from_name': {
        const i = g.OUTCOMES.indexOf(a.name);
        return i < 0 ? null : BigInt(i);
      }
      default: return undefined;
    }
  }
}

module.exports = { build };
