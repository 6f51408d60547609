'use strict';
// Every other guard: bulkhead, limiter, admission, keyed breakers, retry budget and policy,
// the retry driver, deadline, HTTP, latency tracker, hedging, adaptive throttle, queue
// discipline, brownout, backoff.
const test = require('node:test');
const assert = require('node:assert/strict');
const g = require('..');

const ms = (n) => BigInt(n) * 1_000_000n;

test('Bulkhead: the cap, release once, execute, stats', async () => {
  const b = new g.Bulkhead({ maxConcurrent: 2 });
  const p1 = b.tryAcquire();
  const p2 = b.tryAcquire();
  assert.throws(() => b.tryAcquire(), (e) => e instanceof g.BulkheadFullError && e.inFlight === 2 && e.maxConcurrent === 2);
  assert.equal(p1.release(), true);
  assert.equal(p1.release(), false);
  assert.equal(b.inFlight, 1);
  p2.release();
  let inside = 0, peak = 0;
  const work = () => b.execute(async () => { inside++; peak = Math.max(peak, inside); await new Promise((r) => setImmediate(r)); inside--; });
  const results = await Promise.allSettled([work(), work(), work(), work()]);
  assert.equal(results.filter((r) => r.status === 'fulfilled').length, 2);
  assert.equal(results.filter((r) => r.status === 'rejected' && r.reason instanceof g.BulkheadFullError).length, 2);
  assert.equal(peak, 2);
  assert.deepEqual(b.stats(), { acquired: 4, rejected: 3, released: 4, inFlight: 0, maxConcurrent: 2 });
  assert.throws(() => new g.Bulkhead({ maxConcurrent: 0 }), (e) => e instanceof RangeError && e.option === 'maxConcurrent');
});

test('Bulkhead: execute holds its permits by count; a release with none held does nothing', async () => {
  const b = new g.Bulkhead({ maxConcurrent: 1 });
  const f = b._fast();
  assert.equal(f.releaseCounted(), false, 'none held: refused, nothing released');
  const held = b.tryAcquire();
  assert.equal(f.releaseCounted(), false, 'a permit object is not one held by count');
  assert.equal(b.inFlight, 1);
  held.release();
  let finish;
  const call = b.execute(() => new Promise((resolve) => { finish = resolve; }));
  assert.equal(b.inFlight, 1);
  await assert.rejects(b.execute(async () => 1), g.BulkheadFullError);
  finish(5);
  assert.equal(await call, 5);
  assert.equal(b.inFlight, 0);
  await assert.rejects(b.execute(async () => { throw new Error('boom'); }), /boom/);
  await assert.rejects(b.execute(() => { throw new Error('sync'); }), /sync/);
  assert.equal(await b.execute(() => 'value'), 'value');
  assert.equal(b.inFlight, 0);
  assert.equal(f.releaseCounted(), false);
  assert.equal(f.acquireCounted(), 0);
  assert.equal(f.acquireCounted(), -1, 'full');
  assert.equal(f.releaseCounted(), true);
  assert.equal(b.stats().released, b.stats().acquired);
});

test('run-time resizes: Bulkhead.setMaxConcurrent, Limiter.setMaxLimit, RetryBudget.setCapacity', () => {
  const b = new g.Bulkhead({ maxConcurrent: 2 });
  const p1 = b.tryAcquire();
  const p2 = b.tryAcquire();
  assert.equal(b.setMaxConcurrent(1), 2, 'returns the cap it replaced');
  assert.equal(b.maxConcurrent, 1);
  assert.equal(b.config.maxConcurrent, 2, 'the config keeps the cap it was built with');
  assert.equal(b.inFlight, 2, 'calls in flight are kept');
  p1.release();
  assert.throws(() => b.tryAcquire(), (e) => e instanceof g.BulkheadFullError && e.maxConcurrent === 1);
  p2.release();
  b.tryAcquire().release();
  assert.equal(b.setMaxConcurrent(0), 1);
  assert.throws(() => b.tryAcquire(), g.BulkheadFullError);
  assert.equal(b.stats().maxConcurrent, 0);
  assert.throws(() => b.setMaxConcurrent(2 ** 32), (e) => e instanceof RangeError && e.option === 'maxConcurrent');
  assert.throws(() => b.setMaxConcurrent(-1), (e) => e instanceof RangeError && e.option === 'maxConcurrent');
  assert.throws(() => b.setMaxConcurrent('3'), (e) => e instanceof TypeError && e.option === 'maxConcurrent');
  // one bulkhead in a SharedArrayBuffer: a resize through one view is seen through the other
  const shared = g.Bulkhead.shared({ maxConcurrent: 4 });
  g.Bulkhead.fromShared(shared.sharedMemory).setMaxConcurrent(3);
  assert.equal(shared.maxConcurrent, 3);

  const l = new g.Limiter({ limit: 10 });
  assert.equal(l.maxLimit, null);
  assert.equal(l.setMaxLimit(2), null, 'no ceiling before');
  assert.equal(l.maxLimit, 2);
  assert.equal(l.limit, 2, 'the limit is held under the ceiling');
  const held = [l.tryAcquire(), l.tryAcquire()];
  assert.throws(() => l.tryAcquire(), g.LimitExceededError);
  for (const p of held) p.report('ignored');
  assert.equal(l.setMaxLimit(0), 2);
  assert.throws(() => l.tryAcquire(), g.LimitExceededError);
  assert.equal(l.clearMaxLimit(), 0);
  assert.equal(l.clearMaxLimit(), null);
  assert.equal(l.limit, 10);
  assert.throws(() => l.setMaxLimit(2 ** 32), (e) => e instanceof RangeError && e.option === 'maxLimit');
  assert.throws(() => l.setMaxLimit(null), (e) => e instanceof TypeError && e.option === 'maxLimit');

  const t = new g.RetryBudget({ capacity: 10, ratio: 1 });
  assert.equal(t.capacity, 10);
  assert.equal(t.setCapacity(3), 10);
  assert.equal(t.capacity, 3);
  assert.ok(t.tokens() <= 3, 'a smaller bucket drops what is above it');
  for (let i = 0; i < 10; i++) t.deposit();
  assert.equal(t.tokens(), 3);
  assert.throws(() => t.setCapacity(-1), (e) => e instanceof RangeError && e.option === 'capacity');
  assert.throws(() => t.setCapacity(2e9), (e) => e instanceof RangeError && e.option === 'capacity');
  assert.throws(() => t.setCapacity(NaN), (e) => e instanceof RangeError && e.option === 'capacity');
  const grpc = new g.RetryBudget({ mode: 'grpc' });
  assert.equal(grpc.capacity, null);
  assert.throws(() => grpc.setCapacity(3), (e) => e instanceof TypeError && e.option === 'capacity' && /token_bucket/.test(e.message));
});

test('Limiter: fixed limit, priorities, AIMD grows and halves, limitChange event', async () => {
  const l = new g.Limiter({ limit: 2 });
  assert.equal(l.limit, 2);
  const a = l.tryAcquire(0), b = l.tryAcquire(0);
  assert.throws(() => l.tryAcquire(0), (e) => e instanceof g.LimitExceededError && e.reason === 'limit_reached');
  a.report('success'); b.report('ignored');
  assert.throws(() => a.report('success'), g.PermitError);
  assert.throws(() => l.tryAcquire(8), (e) => e instanceof RangeError && e.option === 'priority');
  const aimd = new g.Limiter({ limit: { algorithm: 'aimd', initialLimit: 10, minLimit: 1, maxLimit: 20, interval: 1 }, window: 1, minWindowSamples: 1 });
  const changes = [];
  aimd.on('limitChange', (e) => changes.push([e.from, e.to]));
  await aimd.execute(async () => { await new Promise((r) => setTimeout(r, 3)); });
  await aimd.execute(async () => { await new Promise((r) => setTimeout(r, 3)); });
  await assert.rejects(aimd.execute(async () => { await new Promise((r) => setTimeout(r, 3)); throw Object.assign(new Error('busy'), { status: 503, headers: { 'retry-after': '1' } }); }));
  await aimd.execute(async () => { await new Promise((r) => setTimeout(r, 3)); });
  assert.ok(changes.length >= 1, 'the limit moved');
  assert.ok(changes.some(([from, to]) => to < from), 'a drop lowered it');
  assert.equal(aimd.config.limit.algorithm, 'aimd');
  assert.throws(() => new g.Limiter({ limit: { algorithm: 'cubic' } }), (e) => e instanceof RangeError && e.option === 'limit.algorithm');
  assert.throws(() => new g.Limiter({ limit: { algorithm: 'aimd', backoffRatio: 2 } }), (e) => e instanceof RangeError && e.option === 'limit.backoffRatio');
  assert.throws(() => new g.Limiter({ partitions: [{ share: 0 }] }), (e) => e instanceof RangeError && e.option === 'partitions[0].share');
});

test('Admission: per-priority limits, refusal with Retry-After seconds', () => {
  const d = new g.Admission({ limits: [2, 1, 1, 1, 1, 1, 1, 1] });
  const p = d.tryAcquire(1);
  assert.throws(() => d.tryAcquire(1), (e) => e instanceof g.AdmissionRejectedError && e.retryAfterSecs >= 1 && e.priority === 1);
  const q = d.tryAcquire(0);
  assert.throws(() => d.tryAcquire(0), g.AdmissionRejectedError);
  p.report('success'); q.report('overloaded');
  const s = d.stats();
  assert.equal(s.admitted, 2);
  assert.equal(s.succeeded, 1);
  assert.equal(s.dropped, 1);
  assert.equal(s.refusedByPriority[1], 1);
  assert.equal(d.limit, null);
  assert.throws(() => new g.Admission({ limits: [1, 2, 1, 1, 1, 1, 1, 1] }), (e) => e instanceof RangeError && e.option === 'limits[1]');
});

test('KeyedBreakers: one breaker per key', async () => {
  const k = new g.KeyedBreakers({ windowSize: 2, minimumCalls: 2, slots: 4 });
  for (let i = 0; i < 2; i++) k.tryAcquire('a').report('timeout');
  assert.equal(k.state('a'), 'open');
  assert.equal(k.state('b'), 'closed');
  assert.throws(() => k.tryAcquire('a'), g.BreakerOpenError);
  assert.equal(await k.execute('b', async () => 1), 1);
  await assert.rejects(k.execute('a', async () => 1), g.BreakerOpenError);
  assert.equal(k.stats().entries, 2);
  assert.equal(k.stats().open, 1);
});

test('RetryBudget: token bucket, modes, bad mode', () => {
  const b = new g.RetryBudget({ capacity: 2, ratio: 0.5 });
  assert.equal(b.mode, 'token_bucket');
  assert.ok(b.withdraw() instanceof g.RetryReceipt);
  const r = b.withdraw();
  assert.equal(r.costMicros, 1_000_000, 'a token bucket retry costs one token');
  assert.equal(b.withdraw(), null, 'empty: refused');
  b.deposit(); b.deposit();
  assert.ok(b.withdraw('timeout'));
  assert.equal(b.report('success', undefined, r), 'success');
  assert.equal(r.done, true);
  assert.throws(() => b.report('success', undefined, r), (e) => e instanceof g.PermitError && e.code === 'GUARDS_PERMIT_ALREADY_REPORTED');
  assert.deepEqual({ ...b.stats(), tokens: undefined }, { deposits: 2, withdrawals: 3, refusals: 1, refunds: 0, failures: 0, tokens: undefined });
  const other = new g.RetryBudget().withdraw();
  assert.throws(() => b.report('success', undefined, other), (e) => e instanceof g.PermitError && e.code === 'GUARDS_PERMIT_WRONG_GUARD', 'a receipt goes back to its own budget');
  assert.throws(() => b.report('success', undefined, {}), (e) => e instanceof TypeError && e.option === 'receipt');
  assert.equal(new g.RetryBudget({ mode: 'grpc', maxTokens: 10 }).mode, 'grpc');
  assert.equal(new g.RetryBudget({ mode: 'aws' }).mode, 'aws');
  assert.equal(new g.RetryBudget({ mode: 'windowed', ttl: 1000 }).mode, 'windowed');
  assert.throws(() => new g.RetryBudget({ mode: 'leaky' }), (e) => e instanceof RangeError && e.option === 'mode');
  assert.throws(() => new g.RetryBudget({ ratio: -1 }), (e) => e instanceof RangeError && e.option === 'ratio');
  assert.throws(() => b.withdraw('soon'), (e) => e instanceof TypeError && e.option === 'cause');
});

test('RetryPolicy.decide: retries by outcome, honours Retry-After, asks the budget last', () => {
  const p = new g.RetryPolicy({ maxAttempts: 3, backoff: { base: 10, cap: 100, jitter: 'none' } });
  assert.deepEqual(p.decide(1, 'timeout'), { retry: true, delayMs: 10 });
  assert.deepEqual(p.decide(2, 'timeout'), { retry: true, delayMs: 20 });
  assert.deepEqual(p.decide(3, 'timeout'), { retry: false, reason: 'attempts_exhausted' });
  assert.deepEqual(p.decide(1, 'permanent'), { retry: false, reason: 'permanent' });
  assert.deepEqual(p.decide(1, 'overloaded'), { retry: false, reason: 'overloaded' });
  assert.deepEqual(p.decide(1, 'throttled', { retryAfterMs: 50 }), { retry: true, delayMs: 50 });
  assert.deepEqual(p.decide(1, 'timeout', { idempotency: 'unkeyed_side_effect' }), { retry: false, reason: 'not_idempotent' });
  const empty = new g.RetryBudget({ capacity: 1, ratio: 0 });
  empty.withdraw();
  assert.deepEqual(p.decide(1, 'timeout', { budget: empty }), { retry: false, reason: 'budget_exhausted' });
  assert.deepEqual(p.decide(1, 'timeout', { timeLeftMs: 5 }), { retry: false, reason: 'deadline_exceeded' });
  assert.throws(() => new g.RetryPolicy({ maxAttempts: 0 }), (e) => e instanceof RangeError && e.option === 'maxAttempts');
  assert.throws(() => new g.RetryPolicy({ backoff: { jitter: 'wild' } }), (e) => e instanceof RangeError && e.option === 'backoff.jitter');
  assert.throws(() => new g.RetryPolicy({ backoff: { base: 10, cap: 5 } }), (e) => e instanceof RangeError && e.option === 'backoff.cap');
});

test('RetryDriver: attempt -> wait -> attempt -> succeeded, with explicit times', () => {
  const p = new g.RetryPolicy({ maxAttempts: 3, backoff: { base: 25, cap: 1000, jitter: 'none' } });
  const d = new g.RetryDriver(p, { deadline: ms(3000), attemptTimeoutMs: 60, marginMs: 1 });
  const a = d.start(ms(1000));
  assert.deepEqual(a, { kind: 'attempt', number: 1, budgetMs: 59, expiresAt: ms(1059), attempts: 1 });
  const w = d.report('timeout', null, ms(1059));
  assert.deepEqual(w, { kind: 'wait', retryAfterMs: 25, retryAt: ms(1084), attempts: 1 });
  assert.equal(d.resume(ms(1084)).kind, 'attempt');
  const s = d.report('throttled', 5000, ms(1100));
  assert.deepEqual(s, { kind: 'give_up', reason: 'deadline_exceeded', overloaded: true, attempts: 2 });
  assert.equal(d.phase, 'gave_up');
  assert.throws(() => d.cancel(), (e) => e instanceof g.RetryDriverError && e.code === 'GUARDS_RETRY_DRIVER_PHASE' && e.call === 'cancel' && e.phase === 'gave_up');
  assert.throws(() => d.report('success'), (e) => e instanceof g.RetryDriverError && e.call === 'report');
  const d2 = new g.RetryDriver(p);
  d2.start();
  assert.equal(d2.report('success').kind, 'succeeded');
  assert.throws(() => new g.RetryDriver(p, { attemptTimeoutMs: -1 }), (e) => e instanceof RangeError && e.option === 'attemptTimeoutMs');
  assert.throws(() => new g.RetryDriver(p, { idempotency: 'maybe' }), (e) => e instanceof TypeError && e.option === 'idempotency');
});

test('Deadline and its wire forms', () => {
  const d = g.Deadline.after(2000, ms(1000));
  assert.equal(d.expiresAt, ms(3000));
  assert.equal(d.timeLeftMs(ms(2500)), 500);
  assert.equal(d.toGrpcTimeout(ms(2500)), '500000u');
  assert.equal(d.toMillis(ms(2500)), '500');
  assert.equal(d.isExpired(ms(3000)), true);
  assert.equal(d.attemptBudgetMs(60, 1, ms(2980)), 19);
  assert.equal(d.attemptBudgetMs(60, 1, ms(3001)), null);
  assert.equal(g.Deadline.fromGrpcTimeout('1S', ms(0)).expiresAt, ms(1000));
  assert.throws(() => g.Deadline.fromGrpcTimeout('1x', ms(0)), (e) => e instanceof RangeError && e.reason === 'unknown_unit');
  assert.deepEqual(d.attemptBudget(60, 1, ms(2980)), { decision: 'start', budgetMs: 19 });
  assert.deepEqual(d.attemptBudget(60, 1, ms(3001)), { decision: 'expired' });
  assert.deepEqual(d.attemptBudget(60, 1, ms(2999) + 500_000n), { decision: 'too_little_left', leftMs: 0.5 });
  assert.equal(g.encodeMillis(1500.7), '1500');
  assert.equal(g.parseMillis('250'), 250);
  assert.throws(() => g.parseMillis('2x'), (e) => e instanceof RangeError && e.reason === 'invalid_character');
  assert.equal(g.Deadline.none().timeLeftMs(), Infinity);
  assert.equal(g.encodeGrpcTimeout(1500), '1500000u');
  assert.equal(g.parseGrpcTimeout('250m'), 250);
  assert.throws(() => g.Deadline.after(NaN), (e) => e instanceof RangeError && e.option === 'timeout');
  assert.equal(g.Deadline.after(5n, 10n).expiresAt, 15n, 'a bigint duration is exact nanoseconds');
});

test('HTTP: status to outcome and Retry-After', () => {
  const now = 784_111_777;
  assert.deepEqual(g.classifyHttp(503, '30', now), { outcome: 'throttled', retryAfterMs: 30_000 });
  assert.deepEqual(g.classifyHttp(503, 'soon', now), { outcome: 'other_transient', retryAfterMs: null });
  assert.deepEqual(g.classifyHttp(404), { outcome: 'permanent', retryAfterMs: null });
  assert.equal(g.parseRetryAfter('Sun, 06 Nov 1994 08:51:37 GMT', now), 120_000);
  assert.equal(g.parseRetryAfter('1.5', now), null);
  assert.equal(g.formatHttpDate(now), 'Sun, 06 Nov 1994 08:49:37 GMT');
  assert.equal(g.outcomeOfStatus(408), 'timeout');
  assert.throws(() => g.classifyHttp(70000), (e) => e instanceof RangeError && e.option === 'status');
});

test('LatencyTracker and Hedging', () => {
  const t = new g.LatencyTracker({ minSamples: 10 });
  for (let i = 1; i <= 100; i++) t.record(i, ms(1000));
  assert.equal(t.count(ms(1000)), 100);
  const p50 = t.quantileMs(0.5, ms(1000));
  assert.ok(Math.abs(p50 - 50) <= 50 / 64 + 1, `p50 ${p50}`);
  assert.ok(t.proposeTimeoutMs(ms(1000)) > 90);
  assert.equal(t.report(ms(990), 'timeout', ms(1000)), 'record');
  assert.equal(t.report(ms(990), 'connection_error', ms(1000)), 'skip');
  assert.throws(() => t.quantileMs(1.5), (e) => e instanceof RangeError && e.option === 'q');
  assert.throws(() => t.quantileMs(NaN), (e) => e instanceof RangeError && e.option === 'q');
  assert.ok(t.quantileMs(0, ms(1000)) <= 1.02, 'q = 0 is the smallest');
  assert.ok(t.falseTimeoutRate(50, ms(1000)) > 0.4);
  const h = new g.Hedging({ minSamples: 5, maxHedges: 1, refreshInterval: 0 });
  for (let i = 0; i < 20; i++) h.recordLatency(10, ms(1000));
  assert.equal(h.shouldHedge(ms(1000), 0, false, null, ms(1001)).reason, 'not_idempotent');
  const w = h.shouldHedge(ms(1000), 0, true, null, ms(1001));
  assert.equal(w.decision, 'wait_until');
  assert.equal(h.shouldHedge(ms(1000), 0, true, null, ms(1100)).decision, 'hedge_now');
  assert.equal(h.shouldHedge(ms(1000), 1, true, null, ms(1100)).reason, 'limit_reached');
});

test('AdaptiveThrottle, QueueDiscipline, Brownout, Backoff', () => {
  const a = new g.AdaptiveThrottle({ minRequests: 0, k: 1 });
  assert.equal(a.rejectProbability(ms(1)), 0);
  for (let i = 0; i < 50; i++) { a.shouldReject(ms(1)); a.report('overloaded', ms(1)); }
  assert.ok(a.rejectProbability(ms(1)) > 0.5);
  const q = new g.QueueDiscipline({ capacity: 2, codel: false, lifo: false });
  q.push(1, 1, undefined, ms(1));
  q.push(2, 0, undefined, ms(2));
  assert.throws(() => q.push(3, 1, undefined, ms(3)), (e) => e instanceof g.QueueFullError);
  assert.equal(q.length, 2);
  assert.equal(q.pop(ms(4)).id, 2, 'priority 0 is served first');
  assert.equal(q.remove(1), true);
  assert.equal(q.pop(ms(5)), null);
  const b = new g.Brownout({ optional: true, fallbackOn: ['breaker_open', 'timeout'] });
  assert.equal(b.onRefusal('breaker_open'), 'serve_fallback');
  assert.equal(b.onRefusal('bulkhead_full'), 'fail_fast');
  assert.equal(b.report('permanent'), null);
  assert.equal(g.Brownout.kindOf('cancelled'), null);
  assert.throws(() => new g.Brownout({ fallbackOn: ['soon'] }), TypeError);
  const bo = new g.Backoff({ base: 10, cap: 40, jitter: 'none' });
  assert.deepEqual([0, 1, 2, 3].map((n) => bo.delayMs(n)), [10, 20, 40, 40]);
  const full = new g.Backoff({ base: 10, cap: 40, seed: 7 });
  for (let n = 1; n < 10; n++) { const d = full.delayMs(n); assert.ok(d >= 0 && d <= 40); }
  assert.equal(g.stableOffsetMs('job', 60_000), g.stableOffsetMs('job', 60_000));
});
