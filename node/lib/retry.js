'use strict';
// retry(fn, options): the retry loop on core's RetryDriver. This file only sleeps, calls,
// times attempts out and classifies; the driver decides every step.

const { EventEmitter } = require('node:events');
const native = require('./native');
const errors = require('./errors');
const { NUM, classifyWith } = require('./outcome');

const POLICY_KEYS = new Set([
  'maxAttempts', 'retryTimeouts', 'retryConnectionErrors', 'retryOtherTransient',
  'retryThrottled', 'honorRetryAfter', 'maxRetryAfter', 'minAttemptTime',
  'unkeyedSideEffects', 'backoff', 'seed',
]);
const OWN_KEYS = new Set([
  'policy', 'budget', 'timeoutMs', 'deadline', 'attemptTimeoutMs', 'marginMs',
  'idempotency', 'classify', 'classifyResult', 'onRetry', 'signal', 'name',
]);

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal && signal.aborted) { reject(signal.reason); return; }
    const onAbort = () => { clearTimeout(timer); reject(signal.reason); };
    const timer = setTimeout(() => {
      if (signal) signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    if (signal) signal.addEventListener('abort', onAbort, { once: true });
  });
}

function giveUpError(reason, attempts, cause) {
  const msg = `gave up after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${reason}`;
  let e;
  switch (reason) {
    case 'deadline_exceeded': e = new errors.DeadlineExceededError(msg, { cause }); break;
    case 'budget_exhausted': e = new errors.BudgetExhaustedError(msg, { cause }); break;
    default: e = new errors.RetriesExhaustedError(msg, { cause });
  }
  e.reason = reason;
  e.attempts = attempts;
  return e;
}

/**
 * A retry plan, built once and shared: `new Retry(options).execute(fn)`. `fn` gets
 * `{ signal, attempt, budgetMs }` and may return a promise or a value.
 */
class Retry extends EventEmitter {
  #policy; #budget; #driverOptions; #classify; #classifyResult; #onRetry; #timed;
  #stats = { calls: 0, attempts: 0, retries: 0, successes: 0, failures: 0, attemptTimeouts: 0, cancelled: 0 };

  constructor(options = {}) {
    super();
    if (options === null || typeof options !== 'object') {
      throw errors.badOption('TypeError', 'options', 'retry: options must be an object');
    }
    const policyOptions = {};
    for (const [k, v] of Object.entries(options)) {
      if (POLICY_KEYS.has(k)) policyOptions[k] = v;
      else if (!OWN_KEYS.has(k)) {
        throw errors.badOption('TypeError', k, `retry: unknown option \`${k}\` (valid options: ${[...POLICY_KEYS, ...OWN_KEYS].join(', ')})`);
      }
    }
    if (options.policy !== undefined) {
      if (!(options.policy instanceof native.RetryPolicy)) throw errors.badOption('TypeError', 'policy', 'retry: `policy` must be a RetryPolicy');
      if (Object.keys(policyOptions).length) throw errors.badOption('TypeError', 'policy', 'retry: give either `policy` or its options, not both');
      this.#policy = options.policy;
    } else {
      this.#policy = new native.RetryPolicy(policyOptions);
    }
    if (options.budget !== undefined && !(options.budget instanceof native.RetryBudget)) {
      throw errors.badOption('TypeError', 'budget', 'retry: `budget` must be a RetryBudget');
    }
    for (const k of ['classify', 'classifyResult', 'onRetry']) {
      if (options[k] !== undefined && typeof options[k] !== 'function') throw errors.badOption('TypeError', k, `retry: \`${k}\` must be a function`);
    }
    this.#budget = options.budget;
    this.#classify = options.classify;
    this.#classifyResult = options.classifyResult;
    this.#onRetry = options.onRetry;
    const d = {};
    for (const k of ['timeoutMs', 'deadline', 'attemptTimeoutMs', 'marginMs', 'idempotency']) {
      if (options[k] !== undefined) d[k] = options[k];
    }
    if (this.#budget) d.budget = this.#budget;
    this.#driverOptions = d;
    this.#timed = d.timeoutMs !== undefined || d.deadline !== undefined || d.attemptTimeoutMs !== undefined;
    // Validate the driver options now (a bad one throws here, naming it).
    new native.RetryDriver(this.#policy, d);
  }

  /** The native policy. */
  get policy() { return this.#policy; }
  /** The budget (if any). */
  get budget() { return this.#budget; }
  /** Counters of this plan's calls. */
  stats() { return { ...this.#stats, policy: this.#policy.stats() }; }

  /**
   * Run `fn` with retries. `options.signal` cancels everything (the attempt out is aborted
   * and the wait stopped); `options.deadline` / `options.timeoutMs` narrow the plan's.
   */
  async execute(fn, options) {
    if (typeof fn !== 'function') throw errors.badOption('TypeError', 'fn', 'retry: fn must be a function');
    const signal = options && options.signal;
    let dopts = this.#driverOptions;
    if (options && (options.deadline !== undefined || options.timeoutMs !== undefined)) {
      dopts = { ...dopts };
      if (options.deadline !== undefined) dopts.deadline = dopts.deadline === undefined ? options.deadline : (options.deadline < dopts.deadline ? options.deadline : dopts.deadline);
      if (options.timeoutMs !== undefined) dopts.timeoutMs = Math.min(options.timeoutMs, dopts.timeoutMs ?? Infinity);
    }
    const timed = this.#timed || dopts !== this.#driverOptions;
    const d = new native.RetryDriver(this.#policy, dopts);
    const st = this.#stats;
    st.calls++;
    if (signal && signal.aborted) { d.cancel(); st.cancelled++; throw signal.reason; }
    let budgetMs = d._start();
    if (budgetMs === -1) throw giveUpError(d.giveUpReason, 0, undefined);
    for (;;) {
      const attempt = d.attempts;
      st.attempts++;
      let value, err, failed = false, timedOut = false;
      const ac = (timed || signal) ? new AbortController() : null;
      try {
        if (ac === null) {
          value = await fn({ signal: undefined, attempt, budgetMs });
        } else {
          value = await this.#attempt(fn, ac, signal, attempt, budgetMs, timed);
        }
      } catch (e) {
        failed = true;
        err = e;
        if (e && e.code === 'GUARDS_ATTEMPT_TIMEOUT') { timedOut = true; st.attemptTimeouts++; }
      }
      if (failed && signal && signal.aborted) {
        d.cancel();
        st.cancelled++;
        throw signal.reason;
      }
      let outcome, retryAfterMs;
      if (!failed) {
        if (this.#classifyResult) {
          const c = this.#classifyResult(value);
          outcome = c ? c.outcome : 'success';
          retryAfterMs = c && c.retryAfterMs != null ? c.retryAfterMs : -1;
        } else {
          outcome = 'success';
          retryAfterMs = -1;
        }
      } else {
        const c = timedOut ? { outcome: 'timeout', retryAfterMs: null } : classifyWith(this.#classify, err);
        outcome = c.outcome;
        retryAfterMs = c.retryAfterMs != null ? c.retryAfterMs : -1;
      }
      let r = d._report(NUM[outcome], retryAfterMs);
      if (r === -2) {
        st.successes++;
        return value;
      }
      if (r === -3) {
        const waitMs = d.waitMs;
        st.retries++;
        const info = { attempt, outcome, error: err, delayMs: waitMs, retry: this };
        if (this.#onRetry) this.#onRetry(info);
        if (this.listenerCount('retry')) this.emit('retry', info);
        try {
          await sleep(waitMs, signal);
          r = d._resume();
          // a timer may fire a little before the monotonic clock reaches the instant
          while (r === -3) {
            await sleep(Math.max(1, d.waitMs), signal);
            r = d._resume();
          }
        } catch (e) {
          d.cancel();
          st.cancelled++;
          throw e;
        }
        if (r >= 0) budgetMs = r;
      }
      if (r >= 0) continue;
      // gave up
      const reason = d.giveUpReason;
      if (this.listenerCount('giveUp')) this.emit('giveUp', { reason, attempts: d.attempts, error: err, outcome, retry: this });
      if (!failed) {
        // the policy gave up on a result the caller classified as a failure: return it
        st.failures++;
        return value;
      }
      st.failures++;
      switch (reason) {
        case 'attempts_exhausted':
        case 'retry_after_too_long':
        case 'deadline_exceeded':
        case 'budget_exhausted':
          throw giveUpError(reason, d.attempts, err);
        default:
          throw err;
      }
    }
  }

  #attempt(fn, ac, signal, attempt, budgetMs, timed) {
    return new Promise((resolve, reject) => {
      let timer = null;
      let settled = false;
      const finish = (f, v) => {
        if (settled) return;
        settled = true;
        if (timer !== null) clearTimeout(timer);
        if (signal) signal.removeEventListener('abort', onAbort);
        f(v);
      };
      const onAbort = () => {
        ac.abort(signal.reason);
        finish(reject, signal.reason);
      };
      if (signal) signal.addEventListener('abort', onAbort, { once: true });
      if (timed && Number.isFinite(budgetMs)) {
        timer = setTimeout(() => {
          const e = new errors.AttemptTimeoutError(`attempt ${attempt} timed out after ${budgetMs} ms`);
          ac.abort(e);
          finish(reject, e);
        }, Math.max(0, budgetMs));
      }
      let p;
      try {
        p = fn({ signal: ac.signal, attempt, budgetMs });
      } catch (e) {
        finish(reject, e);
        return;
      }
      Promise.resolve(p).then((v) => finish(resolve, v), (e) => finish(reject, e));
    });
  }
}

/** Run `fn` with retries (a one-off `Retry`). */
function retry(fn, options) {
  const { signal, ...rest } = options || {};
  return new Retry(rest).execute(fn, { signal });
}

module.exports = { Retry, retry, sleep };
