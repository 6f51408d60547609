'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const g = require('..');

const ms = (n) => BigInt(n) * 1_000_000n;
const failure = () => Object.assign(new Error('reset'), { code: 'ECONNRESET' });

test('opens at the failure rate, refuses with a typed error, probes after the open duration', () => {
  const b = new g.CircuitBreaker({ windowSize: 4, minimumCalls: 4, openDuration: 1000, halfOpenProbes: 1 });
  for (let i = 1; i <= 4; i++) {
    const p = b.tryAcquire(ms(i));
    assert.equal(p.isProbe, false);
    assert.equal(p.report('timeout', ms(i)), i < 4 ? 'counted' : 'opened');
  }
  assert.equal(b.state(ms(5)), 'open');
  assert.throws(() => b.tryAcquire(ms(5)), (e) => {
    assert.ok(e instanceof g.BreakerOpenError && e instanceof g.RejectedError && e instanceof g.GuardsError);
    assert.equal(e.code, 'GUARDS_BREAKER_OPEN');
    assert.equal(e.retryAt, ms(1004));
    assert.equal(e.retryAfterMs, 999);
    return true;
  });
  const probe = b.tryAcquire(ms(1004));
  assert.equal(probe.isProbe, true);
  assert.throws(() => b.tryAcquire(ms(1005)), (e) => e.code === 'GUARDS_BREAKER_HALF_OPEN_FULL');
  assert.equal(probe.report('success', ms(1006)), 'closed');
  assert.equal(b.state(ms(1007)), 'closed');
  const s = b.stats();
  assert.equal(s.closedToOpen, 1);
  assert.equal(s.halfOpenToClosed, 1);
  assert.equal(s.rejectedOpen, 1);
});

test('a permit is reported once; the second report throws and counts nothing', () => {
  const b = new g.CircuitBreaker();
  const p = b.tryAcquire();
  assert.equal(p.done, false);
  p.report('success');
  assert.equal(p.done, true);
  assert.throws(() => p.report('timeout'), (e) => e instanceof g.PermitError && e.code === 'GUARDS_PERMIT_ALREADY_REPORTED');
  assert.equal(b.stats().successes, 1);
  assert.equal(b.stats().failures, 0);
});

test('4xx and programming errors are not failures; cancelled ordinary calls are ignored', () => {
  const b = new g.CircuitBreaker({ windowSize: 2, minimumCalls: 2 });
  b.tryAcquire().report('permanent');
  b.tryAcquire().report('ignored');
  b.tryAcquire().report('cancelled');
  b.tryAcquire().report('rejected');
  const s = b.stats();
  assert.equal(s.successes, 1);
  assert.equal(s.failures, 0);
  assert.equal(s.ignored, 3);
  assert.equal(b.state(), 'closed');
});

test('execute reports results and classified errors, and emits state changes', async () => {
  const b = new g.CircuitBreaker({ windowSize: 3, minimumCalls: 3, failureRateThreshold: 1, openDuration: 60_000 });
  const changes = [];
  b.on('stateChange', (e) => changes.push(`${e.from}->${e.to}`));
  assert.equal(await b.execute(async () => 42), 42);
  assert.equal(await b.execute(() => 'sync'), 'sync');
  await assert.rejects(b.execute(async () => { throw new TypeError('bug'); }), TypeError);
  await assert.rejects(b.execute(() => { throw failure(); }), /reset/);
  assert.equal(b.stats().ignored, 1);
  await assert.rejects(b.execute(async () => { throw failure(); }), /reset/);
  await assert.rejects(b.execute(async () => { throw failure(); }), /reset/);
  assert.equal(b.state(), 'open');
  let called = false;
  await assert.rejects(b.execute(async () => { called = true; }), g.BreakerOpenError);
  assert.equal(called, false);
  assert.deepEqual(changes, ['closed->open']);
  assert.equal(b.outstanding, 0);
});

test('a time window and every option in camelCase; config reads back in ms', () => {
  const b = new g.CircuitBreaker({
    windowKind: 'time', windowDuration: 10_000, windowBuckets: 10, failureRateThreshold: 0.25,
    slowCallDuration: 250, openDuration: 2500n * 1_000_000n, probeTimeout: 100,
  });
  const c = b.config;
  assert.equal(c.windowKind, 'time');
  assert.equal(c.windowDuration, 10_000);
  assert.equal(c.openDuration, 2500);
  assert.equal(c.probeTimeout, 100);
  assert.equal(c.failureRateThreshold, 0.25);
  assert.equal(b.capacity, 128);
  assert.equal(new g.CircuitBreaker({ windowSize: 500 }).capacity, 1024);
});

test('bad options throw TypeError / RangeError naming the option', () => {
  const cases = [
    [{ windowSise: 3 }, TypeError, 'windowSise'],
    [{ windowSize: 'x' }, TypeError, 'windowSize'],
    [{ windowSize: 0 }, RangeError, 'windowSize'],
    [{ windowSize: 2.5 }, RangeError, 'windowSize'],
    [{ windowSize: -1 }, RangeError, 'windowSize'],
    [{ windowSize: 70_000 }, RangeError, 'windowSize'],
    [{ failureRateThreshold: NaN }, RangeError, 'failureRateThreshold'],
    [{ failureRateThreshold: Infinity }, RangeError, 'failureRateThreshold'],
    [{ failureRateThreshold: 1.5 }, RangeError, 'failureRateThreshold'],
    [{ openDuration: -5 }, RangeError, 'openDuration'],
    [{ openDuration: 10, maxOpenDuration: 5 }, RangeError, 'maxOpenDuration'],
    [{ windowKind: 'sliding' }, RangeError, 'windowKind'],
    [{ windowKind: 3 }, TypeError, 'windowKind'],
    [{ openDuration: -1n }, RangeError, 'openDuration'],
    [{ halfOpenProbes: null }, TypeError, 'halfOpenProbes'],
    [{ capacity: 1e9 }, RangeError, 'capacity'],
  ];
  for (const [opts, Cls, option] of cases) {
    assert.throws(() => new g.CircuitBreaker(opts), (e) => {
      assert.ok(e instanceof Cls, `${JSON.stringify(opts, (k, v) => (typeof v === 'bigint' ? `${v}n` : v))}: ${e}`);
      assert.equal(e.option, option);
      assert.equal(e.code, 'GUARDS_INVALID_OPTION');
      assert.match(e.message, new RegExp(option));
      return true;
    });
  }
  assert.throws(() => new g.CircuitBreaker(5), TypeError);
  assert.throws(() => new g.CircuitBreaker([]), TypeError);
});

test('instants are bigint ns; bad instants and outcomes are refused', () => {
  const b = new g.CircuitBreaker();
  assert.throws(() => b.state(-1n), (e) => e instanceof RangeError && e.option === 'now');
  assert.throws(() => b.state(2n ** 64n), RangeError);
  assert.throws(() => b.state(5)); // napi-rs's own argument conversion: an Error with code 'BigintExpected'
  assert.throws(() => b.tryAcquire().report('fine'), (e) => e instanceof TypeError && /outcome/.test(e.message));
  assert.ok(typeof g.nowNs() === 'bigint');
  const before = process.hrtime.bigint();
  const now = g.nowNs();
  assert.ok(now >= before - 1_000_000n, 'nowNs reads CLOCK_MONOTONIC like process.hrtime');
});

test('status, window counts and a made-up fast-path token', () => {
  const b = new g.CircuitBreaker({ windowSize: 10 });
  b.tryAcquire(ms(1)).report('timeout', ms(2));
  assert.deepEqual(b.windowCounts(ms(3)), { calls: 1, failures: 1, slow: 0 });
  const st = b.status();
  assert.equal(st.state, 'closed');
  assert.equal(st.halfOpenAt, 0n);
  const f = b._fast();
  assert.equal(f.report(12345, 0), -1, 'a made-up token counts nothing');
  assert.equal(f.report(-1, 0), -1);
  assert.equal(f.report(NaN, 0), -1);
  assert.throws(() => f.report(0, 99), (e) => e instanceof TypeError && e.option === 'outcome');
  assert.throws(() => f.report('x', 0), (e) => e instanceof TypeError && e.option === 'token');
  const t = f.acquire();
  assert.equal(f.report(t, 0), 0, 'a real token: closed, no change');
  assert.equal(f.report(t, 0), -1, 'a second report of the same token counts nothing');
  assert.equal(b.stats().successes, 1);
});

const UNTIMED = { slowCallDuration: (1n << 64n) - 1n };

test('an untimed breaker admits through its mirror exactly as the breaker would', async () => {
  const b = new g.CircuitBreaker({ ...UNTIMED, windowSize: 2, minimumCalls: 2, failureRateThreshold: 1, openDuration: 60_000 });
  const f = b._fast();
  assert.ok(f.mirror instanceof Int32Array);
  assert.equal(await b.execute(async () => 1), 1, 'the first call asks the breaker');
  const gen = b.status().generation;
  assert.equal(f.mirror[0], gen, 'closed: the mirror shows the generation');
  // A call in flight counts as outstanding; a permit object reported apart from
  // `execute` opens the breaker, and the next `execute` is refused without calling fn.
  let finish;
  const inFlight = b.execute(() => new Promise((resolve) => { finish = resolve; }));
  assert.equal(b.outstanding, 1);
  b.tryAcquire().report('timeout');
  b.tryAcquire().report('timeout');
  assert.equal(b.state(), 'open');
  assert.equal(f.mirror[0], -1, 'a change outside execute clears the mirror');
  let called = false;
  await assert.rejects(b.execute(async () => { called = true; }), g.BreakerOpenError);
  assert.equal(called, false);
  // The call admitted in the closed generation ends after the breaker opened: discarded,
  // as the permit it stands for would be.
  const discarded = b.stats().discarded;
  finish(7);
  assert.equal(await inFlight, 7);
  assert.equal(b.stats().discarded, discarded + 1);
  assert.equal(b.outstanding, 0);
});

test('calls admitted through the mirror are counted, and trip the breaker with an event', async () => {
  const b = new g.CircuitBreaker({ ...UNTIMED, windowSize: 4, minimumCalls: 4, failureRateThreshold: 0.5, openDuration: 60_000 });
  const changes = [];
  b.on('stateChange', (e) => changes.push(`${e.from}->${e.to}`));
  for (let i = 0; i < 2; i++) assert.equal(await b.execute(async () => i), i);
  await assert.rejects(b.execute(async () => { throw failure(); }), /reset/);
  await assert.rejects(b.execute(() => { throw failure(); }), /reset/);
  assert.deepEqual(changes, ['closed->open']);
  const s = b.stats();
  assert.equal(s.successes, 2);
  assert.equal(s.failures, 2);
  assert.equal(b._fast().mirror[0], -1);
  assert.equal(b.outstanding, 0);
});

test('no mirror for a timed, a shared or a fleet-attached breaker; reportIn of a timed one counts nothing', () => {
  const timed = new g.CircuitBreaker();
  const f = timed._fast();
  f.report(f.acquire(), 0);
  assert.equal(f.mirror[0], -1);
  assert.equal(f.reportIn(timed.status().generation * 256), -1);
  assert.equal(timed.stats().successes, 1);
  assert.throws(() => f.reportIn(-1), (e) => e instanceof RangeError && e.option === 'call');
  assert.throws(() => f.reportIn(99), (e) => e instanceof TypeError && e.option === 'outcome');
  const shared = g.CircuitBreaker.shared(UNTIMED);
  const fs = shared._fast();
  fs.report(fs.acquire(), 0);
  assert.equal(fs.mirror[0], -1);
  const own = new g.CircuitBreaker(UNTIMED)._fast();
  own.report(own.acquire(), 0);
  assert.equal(own.mirror[0], 0);
});

test('fast functions called with no arguments read them from io, checked alike', () => {
  const b = new g.CircuitBreaker(UNTIMED);
  const f = b._fast();
  assert.ok(f.io instanceof Int32Array && f.io.length === 4);
  const t = f.acquire();
  f.io[0] = t;
  f.io[1] = 99;
  assert.throws(() => f.report(), (e) => e instanceof TypeError && e.option === 'outcome');
  f.io[1] = 0;
  assert.equal(f.report(), 0, 'the token in io: reported');
  assert.equal(f.report(), -1, 'reported once');
  f.io[0] = -5;
  assert.throws(() => f.reportIn(), (e) => e instanceof RangeError && e.option === 'call');
  f.io[0] = f.mirror[0] * 256;
  assert.equal(f.reportIn(), 0);
  assert.equal(f.reportIn(b.status().generation * 256), 0, 'arguments, when given, win');
  assert.equal(b.stats().successes, 3);
  const l = new g.Limiter()._fast();
  l.io[0] = 9;
  assert.throws(() => l.acquire(), (e) => e instanceof RangeError && e.option === 'priority');
  l.io[0] = 0;
  const lt = l.acquire();
  assert.ok(lt >= 0);
  l.io[0] = lt;
  l.io[1] = 0;
  assert.ok(l.report() >= 1, 'the limit');
});
