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

test('calls through guarded emit the guards\' events', async () => {
  const breaker = new g.CircuitBreaker({ windowSize: 4, minimumCalls: 4, failureRateThreshold: 0.5, openDuration: 60_000 });
  const seen = [];
  breaker.on('stateChange', (e) => seen.push(`${e.from}->${e.to}`));
  const down = async () => { throw Object.assign(new Error('x'), { code: 'ETIMEDOUT' }); };
  const stack = g.guarded([breaker], { fallback: 'degraded' });
  for (let i = 0; i < 4; i++) assert.equal(await stack.execute(down), 'degraded');
  assert.deepEqual(seen, ['closed->open']);
  assert.equal(await stack.execute(async () => 'fresh'), 'degraded', 'open: refused, fallback served');
  assert.equal(breaker.stats().rejectedOpen, 1);

  const limiter = new g.Limiter({ limit: { algorithm: 'aimd', initialLimit: 10, interval: 1 } });
  const limits = [];
  limiter.on('limitChange', (e) => limits.push(e.to));
  const limited = g.guarded([limiter], { fallback: null });
  for (let i = 0; i < 20; i++) {
    await limited.execute(down);
    await new Promise((r) => setTimeout(r, 2));
  }
  assert.ok(limits.length >= 1 && limits.every((l) => l < 10), `limit moved down: ${limits}`);
  assert.equal(limits[limits.length - 1], limiter.limit);
});

test('KeyedBreakers: names and keys, insert, a full set', async () => {
  const k = new g.KeyedBreakers({ slots: 4 });
  const key = g.KeyedBreakers.keyOf('a');
  assert.equal(typeof key, 'bigint');
  assert.equal(k.insert('a'), true);
  assert.equal(k.state(key), 'closed', 'a name and its key are the same breaker');
  for (const n of ['b', 'c', 'd']) assert.equal(k.insert(n), true);
  assert.equal(k.insert('e'), false, 'the set is full');
  await assert.rejects(k.execute('e', async () => 1), (e) => e instanceof g.BreakersFullError && e.code === 'GUARDS_BREAKERS_FULL');
  assert.equal(await k.execute('a', async () => 7), 7);
  assert.equal(k.breakerStats('a').successes, 1);
  assert.equal(k.breakerStats('zzz'), null);
  assert.equal(k.status('zzz'), null);
});
