'use strict';
// retry_budget.json: a `RetryBudget` in the file's mode; receipts held by handle.
// `on_success` / `on_failure` are the budget's `report` with an outcome judged so
// ('success', 'other_transient'); `allow_retry` is a withdrawal whose receipt is dropped.

const { g, Held, int, unitsOf, options, building } = require('./util');

const UNITS = {
  token_bucket: unitsOf('token_budget'), grpc: unitsOf('grpc_throttle'),
  aws: unitsOf('aws_retry_quota'), windowed: unitsOf('windowed_budget'),
};

/** The budget options of the `config.*` arguments under `prefix`. */
function budgetOptions(args, prefix = 'config.') {
  const mode = args[`${prefix}mode`] ?? 'token_bucket';
  const u = UNITS[mode];
  return options(args, (p) => (u ? u.get(p) : undefined), prefix);
}

function build(args) {
  return new Case(building(() => new g.RetryBudget(budgetOptions(args))));
}

class Case {
  constructor(b) { this.b = b; this.receipts = new Held(); }

  run(op, a) {
    const b = this.b;
    switch (op) {
      case 'deposit': b.deposit(a.now); return null;
      case 'withdraw': {
        const r = b.withdraw(a.cause, a.now);
        if (r === null) return false;
        this.receipts.keep(a, r, () => {});
        return true;
      }
      case 'allow_retry': return b.withdraw(a.cause, a.now) !== null;
      case 'on_success': {
        const r = a.permit === undefined ? undefined : this.receipts.take(a);
        b.report('success', a.now, r);
        return null;
      }
      case 'on_failure': b.report('other_transient', a.now); return null;
      case 'tokens_micros': return int(b.tokensMicros(a.now));
      case 'tokens': return b.tokens(a.now);
      case 'receipt_cost_micros': return int(this.receipts.peek(a).costMicros);
      case 'stats': {
        const s = b.stats();
        return { deposits: int(s.deposits), withdrawals: int(s.withdrawals), refusals: int(s.refusals), refunds: int(s.refunds), failures: int(s.failures) };
      }
      default: return undefined;
    }
  }
}

module.exports = { build, budgetOptions };
