'use strict';
// retry_policy.json: a `RetryPolicy` seeded with the case's seed. A scripted gate is a
// function answering every question (and recording it: `gate_calls`); `nextU64` reads
// the policy's own generator.

const { g, ns, int, unitsOf, options, building } = require('./util');

const units = unitsOf('retry_policy');

function build(args) {
  const o = options(args, (p) => units.get(p));
  o.seed = args.seed;
  return new Case(building(() => new g.RetryPolicy(o)));
}

const STATS = ['retries', 'succeeded', 'permanent', 'overloaded', 'notRetryable', 'attemptsExhausted',
  'notIdempotent', 'retryAfterTooLong', 'deadlineExceeded', 'budgetExhausted'];
const snakeKey = (k) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

class Case {
  constructor(p) { this.p = p; this.calls = []; }

  run(op, a) {
    const p = this.p;
    switch (op) {
      case 'decide': {
        const o = { now: a.now, idempotency: a.idempotency, prevDelayMs: a.prev_delay };
        if (a.retry_after !== undefined) o.retryAfterMs = a.retry_after;
        if (a.time_left !== undefined) o.timeLeftMs = a.time_left;
        if (a.gate !== undefined) {
          const allow = a.gate === 'allow';
          o.gate = (now, cause) => { this.calls.push({ now, cause }); return allow; };
        }
        const d = p.decide(Number(a.attempts_made), a.outcome, o);
        return d.retry ? { retry: ns(d.delayMs) } : { give_up: d.reason };
      }
      case 'gate_calls': return this.calls.map((c) => ({ now: c.now, cause: c.cause }));
      case 'stats': {
        const s = p.stats();
        return Object.fromEntries(STATS.map((k) => [snakeKey(k), int(s[k])]));
      }
      case 'worst_case_time': return ns(p.worstCaseTimeMs(a.attempt_timeout));
      case 'rng_next_u64': return p.nextU64();
      default: return undefined;
    }
  }
}

module.exports = { build };
