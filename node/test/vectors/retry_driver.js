'use strict';
// retry_driver.json: a `RetryDriver` with its `RetryPolicy` (seeded with the case's seed)
// and optional `RetryBudget`.

const { g, ns, int, unitsOf, options, building } = require('./util');
const { budgetOptions } = require('./retry_budget');

const policyUnits = unitsOf('retry_policy');
// A field the file leaves out takes its documented default: the attempt settings are a
// DeadlineConfig's (the Node RetryDriver's own defaults put no limit on an attempt).
const ATTEMPT_DEFAULTS = Object.fromEntries(g.configSchema('deadline').map((f) => [f.name, BigInt(Math.round(f.default * 1e6))]));
const STATS = ['retries', 'succeeded', 'permanent', 'overloaded', 'notRetryable', 'attemptsExhausted',
  'notIdempotent', 'retryAfterTooLong', 'deadlineExceeded', 'budgetExhausted', 'rejected', 'ignored', 'cancelled'];
const snakeKey = (k) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

function build(args) {
  const po = options(args, (p) => policyUnits.get(p), 'config.policy.');
  po.seed = args.seed;
  const policy = building(() => new g.RetryPolicy(po));
  const hasBudget = Object.keys(args).some((k) => k.startsWith('config.budget.'));
  const budget = hasBudget ? building(() => new g.RetryBudget(budgetOptions(args, 'config.budget.'))) : undefined;
  const o = {};
  if (budget) o.budget = budget;
  if (args['config.deadline'] !== undefined) o.deadline = args['config.deadline'];
  o.attemptTimeoutMs = args['config.attempt_timeout'] ?? ATTEMPT_DEFAULTS.attemptTimeout;
  o.marginMs = args['config.margin'] ?? ATTEMPT_DEFAULTS.margin;
  if (args['config.idempotency'] !== undefined) o.idempotency = args['config.idempotency'];
  const d = building(() => {
    try {
      return new g.RetryDriver(policy, o);
    } catch (e) {
      // the driver's options are the file's `attempt_timeout` and `margin`
      if (e.option === 'attemptTimeoutMs') e.option = 'attemptTimeout';
      if (e.option === 'marginMs') e.option = 'margin';
      throw e;
    }
  });
  return new Case(d, policy, budget);
}

/** A step as the file spells it (a call in the wrong phase: its error). */
function step(f) {
  let s;
  try {
    s = f();
  } catch (e) {
    if (e instanceof g.RetryDriverError) return { error: { call: e.call, phase: e.phase } };
    throw e;
  }
  switch (s.kind) {
    case 'attempt': return { attempt: { number: int(s.number), budget: ns(s.budgetMs), expires_at: s.expiresAt } };
    case 'wait': return { wait: { retry_at: s.retryAt, retry_after: ns(s.retryAfterMs) } };
    case 'succeeded': return 'succeeded';
    default: return { give_up: s.reason };
  }
}

class Case {
  constructor(d, policy, budget) { this.d = d; this.policy = policy; this.budget = budget; }

  run(op, a) {
    const d = this.d;
    switch (op) {
      case 'start': return step(() => d.start(a.now));
      case 'report': return step(() => d.report(a.outcome, a.retry_after ?? null, a.now));
      case 'resume': return step(() => d.resume(a.now));
      case 'cancel': return step(() => d.cancel());
      case 'state': return { phase: d.phase, attempts: int(d.attempts), retries: int(d.retries), give_up: d.giveUpReason, last_outcome: d.lastOutcome };
      case 'policy_stats': {
        const s = this.policy.stats();
        return Object.fromEntries(STATS.map((k) => [snakeKey(k), int(s[k])]));
      }
      case 'budget': {
        if (!this.budget) throw new Error('the case has no budget');
        const s = this.budget.stats();
        return {
          tokens_micros: int(this.budget.tokensMicros(a.now)), deposits: int(s.deposits), withdrawals: int(s.withdrawals),
          refusals: int(s.refusals), refunds: int(s.refunds), failures: int(s.failures),
        };
      }
      default: return undefined;
    }
  }
}

module.exports = { build };
