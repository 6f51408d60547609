'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const g = require('..');

const openBreaker = () => {
  const b = new g.CircuitBreaker({ windowSize: 1, minimumCalls: 1, openDuration: 60_000 });
  b.tryAcquire().report('timeout');
  return b;
};

test('guards are taken in order; a refusal gives back what was taken', async () => {
  const pool = new g.Bulkhead({ maxConcurrent: 1 });
  const stack = g.guarded([pool, openBreaker()]);
  await assert.rejects(stack.execute(async () => 1), g.BreakerOpenError);
  assert.equal(pool.inFlight, 0);
  assert.equal(pool.stats().acquired, 1);
});

test('fallback: served for refusals and dependency failures, with the error', async () => {
  const events = [];
  const stack = g.guarded([openBreaker()], { fallback: (e) => `cached (${e.code})` });
  stack.on('fallback', (e) => events.push(e.kind));
  assert.equal(await stack.execute(async () => 'live'), 'cached (GUARDS_BREAKER_OPEN)');
  const failing = g.guarded([new g.CircuitBreaker()], { fallback: (e) => e.status });
  assert.equal(await failing.execute(async () => { throw Object.assign(new Error('bad gateway'), { status: 502 }); }), 502);
  const timeout = g.guarded([], { timeoutMs: 10, fallback: 'late' });
  assert.equal(await timeout.execute(() => new Promise(() => {})), 'late');
  assert.deepEqual(events, ['breaker_open']);
});

test("fallback: never for the caller's own errors (bugs, 4xx, cancellations)", async () => {
  const stack = g.guarded([new g.CircuitBreaker()], { fallback: 'nope' });
  await assert.rejects(stack.execute(async () => { null.x(); }), TypeError);
  await assert.rejects(stack.execute(async () => { throw Object.assign(new Error('404'), { status: 404 }); }), /404/);
  await assert.rejects(stack.execute(async () => { throw Object.assign(new Error('aborted'), { name: 'AbortError' }); }), /aborted/);
  assert.equal(stack.stats().fallbacks, 0);
  assert.equal(stack.stats().errors, 3);
});

test('a required operation fails fast; retry inside the fallback; the limiter hears the timeout as a drop', async () => {
  const required = g.guarded([openBreaker()], { fallback: 'x', brownout: new g.Brownout({ optional: false }) });
  await assert.rejects(required.execute(async () => 1), g.BreakerOpenError);
  let calls = 0;
  const stack = g.guarded([new g.CircuitBreaker()], { retry: { maxAttempts: 3, backoff: { base: 1, cap: 1 } }, fallback: 'fb' });
  assert.equal(await stack.execute(async () => { calls++; if (calls < 3) throw new Error('flaky'); return 'live'; }), 'live');
  assert.equal(calls, 3);
  const limiter = new g.Limiter({ limit: 4 });
  const timed = g.guarded([limiter], { timeoutMs: 5 });
  await assert.rejects(timed.execute(() => new Promise(() => {})), g.AttemptTimeoutError);
  assert.equal(limiter.stats().dropped, 1);
  assert.equal(limiter.inFlight, 0);
});

test('keyed breakers need a key; wrap keeps arguments; bad options', async () => {
  const keyed = new g.KeyedBreakers();
  assert.throws(() => g.guarded([keyed]), (e) => e instanceof TypeError && e.option === 'key');
  const add = g.guarded([keyed], { key: 'math' }).wrap(async (a, b) => a + b);
  assert.equal(await add(2, 3), 5);
  assert.throws(() => g.guarded([{}]), (e) => e instanceof TypeError && e.option === 'guards[0]');
  assert.throws(() => g.guarded([], { priority: 9 }), (e) => e instanceof RangeError && e.option === 'priority');
  assert.throws(() => g.guarded([], { fallbak: 1 }), (e) => e instanceof TypeError && e.option === 'fallbak');
});
