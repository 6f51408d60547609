'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const g = require('..');

const fast = { backoff: { base: 1, cap: 2 } };
const flaky = (n, err) => { let calls = 0; const f = async () => { calls++; if (calls <= n) throw err(); return `ok after ${calls}`; }; f.calls = () => calls; return f; };

test('retries transient failures, then succeeds; a budget pays for retries', async () => {
  const budget = new g.RetryBudget({ capacity: 5, ratio: 0.1 });
  const f = flaky(2, () => Object.assign(new Error('502'), { status: 502 }));
  const r = new g.Retry({ maxAttempts: 3, budget, ...fast });
  const seen = [];
  r.on('retry', (e) => seen.push([e.attempt, e.outcome]));
  assert.equal(await r.execute(f), 'ok after 3');
  assert.deepEqual(seen, [[1, 'other_transient'], [2, 'other_transient']]);
  assert.equal(budget.stats().withdrawals, 2);
  assert.equal(budget.stats().deposits, 1);
  assert.equal(r.stats().retries, 2);
});

test('gives up: attempts exhausted (cause kept), permanent and programming errors at once', async () => {
  const err = Object.assign(new Error('down'), { code: 'ECONNREFUSED' });
  await assert.rejects(g.retry(async () => { throw err; }, { maxAttempts: 2, ...fast }), (e) => {
    assert.ok(e instanceof g.RetriesExhaustedError);
    assert.equal(e.code, 'GUARDS_RETRIES_EXHAUSTED');
    assert.equal(e.reason, 'attempts_exhausted');
    assert.equal(e.attempts, 2);
    assert.equal(e.cause, err);
    return true;
  });
  const notFound = Object.assign(new Error('404'), { status: 404 });
  const f = flaky(5, () => notFound);
  await assert.rejects(g.retry(f, { maxAttempts: 3, ...fast }), (e) => e === notFound);
  assert.equal(f.calls(), 1);
  const bug = flaky(5, () => new TypeError('bug'));
  await assert.rejects(g.retry(bug, { maxAttempts: 3, ...fast }), TypeError);
  assert.equal(bug.calls(), 1);
  const refusal = flaky(5, () => new g.BreakerOpenError('open'));
  await assert.rejects(g.retry(refusal, { maxAttempts: 3, ...fast }), g.BreakerOpenError);
  assert.equal(refusal.calls(), 1, 'retry in one layer only: a refusal is not retried');
});

test('an empty budget refuses the retry', async () => {
  const budget = new g.RetryBudget({ capacity: 1, ratio: 0 });
  budget.withdraw();
  await assert.rejects(g.retry(async () => { throw new Error('x'); }, { maxAttempts: 3, budget, ...fast }), (e) => e instanceof g.BudgetExhaustedError && e.reason === 'budget_exhausted');
});

test('Retry-After is honoured: the wait is at least what the server asked', async () => {
  const f = flaky(1, () => Object.assign(new Error('429'), { status: 429, headers: { 'retry-after': '0' }, retryAfterMs: 30 }));
  const r = new g.Retry({ maxAttempts: 2, ...fast });
  let delay;
  r.on('retry', (e) => { delay = e.delayMs; });
  assert.equal(await r.execute(f), 'ok after 2');
  assert.ok(delay >= 30, `waited ${delay} ms`);
  const tooLong = () => Object.assign(new Error('429'), { status: 429, retryAfterMs: 60_000 });
  await assert.rejects(g.retry(async () => { throw tooLong(); }, { maxAttempts: 3, maxRetryAfter: 1000, ...fast }), (e) => e.reason === 'retry_after_too_long');
});

test('each attempt gets its own signal, aborted when it outlives its budget; a late attempt is abandoned', async () => {
  const signals = [];
  const r = new g.Retry({ maxAttempts: 3, attemptTimeoutMs: 20, ...fast });
  const v = await r.execute(({ signal, attempt }) => {
    signals.push(signal);
    if (attempt < 3) return new Promise(() => {}); // never settles: abandoned at 20 ms
    return 'third';
  });
  assert.equal(v, 'third');
  assert.equal(signals.length, 3);
  assert.notEqual(signals[0], signals[1]);
  assert.equal(signals[0].aborted, true);
  assert.equal(signals[0].reason.code, 'GUARDS_ATTEMPT_TIMEOUT');
  assert.equal(signals[2].aborted, false);
  assert.equal(r.stats().attemptTimeouts, 2);
});

test("the caller's signal cancels the attempt out and the wait, and is never retried", async () => {
  const ac = new AbortController();
  let attemptSignal;
  const p = g.retry(({ signal }) => { attemptSignal = signal; return new Promise(() => {}); }, { maxAttempts: 5, signal: ac.signal, ...fast });
  setTimeout(() => ac.abort(new Error('client went away')), 10);
  await assert.rejects(p, /client went away/);
  assert.equal(attemptSignal.aborted, true);
  const ac2 = new AbortController();
  let calls = 0;
  const p2 = g.retry(async () => { calls++; throw new Error('x'); }, { maxAttempts: 5, backoff: { base: 10_000, jitter: 'none', cap: 10_000 }, signal: ac2.signal });
  setTimeout(() => ac2.abort(new Error('stop')), 10);
  await assert.rejects(p2, /stop/);
  assert.equal(calls, 1, 'the wait was cut short');
  const ac3 = new AbortController();
  ac3.abort(new Error('already'));
  await assert.rejects(g.retry(async () => 1, { signal: ac3.signal }), /already/);
});

test('a deadline: no attempt starts once it has passed', async () => {
  await assert.rejects(g.retry(({ budgetMs }) => new Promise((r) => setTimeout(() => r(budgetMs), 100)), { timeoutMs: 30, maxAttempts: 3, ...fast }), (e) => e instanceof g.DeadlineExceededError || e instanceof g.RetriesExhaustedError);
});

test('bad retry options', () => {
  assert.throws(() => new g.Retry({ maxAtempts: 3 }), (e) => e instanceof TypeError && e.option === 'maxAtempts');
  assert.throws(() => new g.Retry({ maxAttempts: 0 }), (e) => e instanceof RangeError && e.option === 'maxAttempts');
  assert.throws(() => new g.Retry({ budget: {} }), (e) => e instanceof TypeError && e.option === 'budget');
  assert.throws(() => new g.Retry({ attemptTimeoutMs: -5 }), (e) => e instanceof RangeError && e.option === 'attemptTimeoutMs');
  assert.throws(() => new g.Retry({ classify: 5 }), (e) => e instanceof TypeError && e.option === 'classify');
});
