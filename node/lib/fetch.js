'use strict';
// createFetch(options): fetch with a deadline header, a timeout per attempt, retries with
// backoff and a budget, Retry-After honoured, and a circuit breaker per host.

const native = require('./native');
const errors = require('./errors');
const { Retry } = require('./retry');
const { NUM, classifyError } = require('./outcome');
const guards = require('./guards');
const { take } = require('./guarded');

const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);
const MILLIS_HEADER = 'x-envoy-expected-rq-timeout-ms';
const OWN = ['fetch', 'breakers', 'deadlineHeader', 'budget'];

function hostKey(url) {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    throw errors.badOption('TypeError', 'url', `fetch: not an absolute URL: ${String(url)}`);
  }
}

/** A response's outcome and Retry-After, by core's HTTP rules. */
function classifyResult(res) {
  return native.classifyHttp(res.status, res.headers.get('retry-after') ?? undefined);
}

/** A response the policy retries is dropped: release its body (and its connection). */
function releaseBody(info) {
  const res = info.value;
  if (res && res.body && typeof res.body.cancel === 'function' && !res.bodyUsed) {
    res.body.cancel().catch(() => {});
  }
}

/**
 * A `fetch` with guards. Options: the retry options (`maxAttempts`, `backoff`,
 * `honorRetryAfter`, `maxRetryAfter`, `attemptTimeoutMs`, `timeoutMs`, `marginMs`, ...),
 * `budget` (default: one per client; `null` for none), `breakers` (a `KeyedBreakers`,
 * default: one per client, keyed by `scheme://host:port`; `null` for none),
 * `deadlineHeader` (`'grpc'`: `grpc-timeout`; `'millis'`:
 * `x-envoy-expected-rq-timeout-ms`; `null`: none), `fetch` (the underlying fetch, default
 * `globalThis.fetch`).
 *
 * Per call, `init.signal` cancels the call (the attempt out is aborted, no retry) and
 * `init.timeoutMs` narrows the client's `timeoutMs` for this call (the whole call,
 * retries and waits included).
 *
 * Responses are classified by status (core's `classifyHttp`): 5xx, 408 and 429 are
 * retried, a 503/429 `Retry-After` is honoured; when the policy gives up on a response,
 * that response is returned. Only idempotent methods are retried freely; POST and PATCH
 * need an `Idempotency-Key` header.
 */
function createFetch(options = {}) {
  if (options === null || typeof options !== 'object') throw errors.badOption('TypeError', 'options', 'createFetch: options must be an object');
  const { fetch: baseFetch = globalThis.fetch, breakers, deadlineHeader = 'grpc', budget, ...retryOptions } = options;
  if (typeof baseFetch !== 'function') throw errors.badOption('TypeError', 'fetch', 'createFetch: `fetch` must be a function');
  if (![null, 'grpc', 'millis'].includes(deadlineHeader)) throw errors.badOption('RangeError', 'deadlineHeader', "createFetch: `deadlineHeader` must be 'grpc', 'millis' or null");
  if (breakers !== undefined && breakers !== null && !(breakers instanceof native.KeyedBreakers || breakers instanceof native.RegionKeyedBreakers)) {
    throw errors.badOption('TypeError', 'breakers', 'createFetch: `breakers` must be a KeyedBreakers (or a RegionKeyedBreakers) or null');
  }
  if (budget !== undefined && budget !== null && !(budget instanceof native.RetryBudget)) {
    throw errors.badOption('TypeError', 'budget', 'createFetch: `budget` must be a RetryBudget or null');
  }
  for (const k of ['classifyResult', 'onRetry', 'policy', 'idempotency']) {
    if (retryOptions[k] !== undefined) throw errors.badOption('TypeError', k, `createFetch: \`${k}\` is the client's own (valid options: ${OWN.join(', ')} and the retry options)`);
  }
  const keyed = breakers === undefined ? new guards.KeyedBreakers({ slots: 64 }) : breakers;
  const sharedBudget = budget === undefined ? new guards.RetryBudget() : (budget ?? undefined);
  const plan = (idempotency) => new Retry({
    ...retryOptions, budget: sharedBudget, idempotency, classifyResult, onRetry: releaseBody,
  });
  const idem = plan('idempotent');
  const keyedSide = plan('keyed_side_effect');
  const unkeyed = plan('unkeyed_side_effect');

  async function guardedFetch(input, init = {}) {
    if (init === null || typeof init !== 'object') throw errors.badOption('TypeError', 'init', 'fetch(input, init): init must be an object');
    const url = typeof input === 'string' ? input : (input instanceof URL ? input.href : input && input.url);
    const key = hostKey(url);
    const method = String(init.method || (input && input.method) || 'GET').toUpperCase();
    const headers = new Headers(init.headers || (input && input.headers) || undefined);
    const p = IDEMPOTENT.has(method) ? idem : (headers.has('idempotency-key') ? keyedSide : unkeyed);
    const { timeoutMs, signal: callerSignal, ...rest } = init;
    if (callerSignal !== undefined && callerSignal !== null && !(callerSignal instanceof AbortSignal)) {
      throw errors.badOption('TypeError', 'signal', 'fetch: `init.signal` must be an AbortSignal');
    }
    const callOptions = {};
    if (callerSignal) callOptions.signal = callerSignal;
    if (timeoutMs !== undefined) callOptions.timeoutMs = timeoutMs;
    return p.execute(async ({ signal, budgetMs }) => {
      const report = keyed ? take(keyed, { key }) : null;
      const h = new Headers(headers);
      if (deadlineHeader !== null && Number.isFinite(budgetMs) && budgetMs < 86_400_000) {
        if (deadlineHeader === 'grpc') h.set('grpc-timeout', native.encodeGrpcTimeout(budgetMs));
        else h.set(MILLIS_HEADER, String(Math.floor(budgetMs)));
      }
      let res;
      try {
        res = await baseFetch(url, { ...rest, method, headers: h, signal: signal ?? callerSignal });
      } catch (err) {
        if (report) report(NUM[outcomeOfError(err, signal, callerSignal)]);
        throw err;
      }
      if (report) report(NUM[classifyResult(res).outcome]);
      return res;
    }, callOptions);
  }

  guardedFetch.breakers = keyed;
  guardedFetch.budget = sharedBudget;
  guardedFetch.stats = () => ({ idempotent: idem.stats(), keyed: keyedSide.stats(), unkeyed: unkeyed.stats() });
  return guardedFetch;
}

function outcomeOfError(err, attemptSignal, callerSignal) {
  if (callerSignal && callerSignal.aborted) return 'cancelled';
  if (attemptSignal && attemptSignal.aborted) return 'timeout';
  return classifyError(err).outcome;
}

module.exports = { createFetch };
