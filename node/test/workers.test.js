'use strict';
// One guard shared by several worker threads: built in a SharedArrayBuffer by the main
// thread, attached by each worker; the workers hammer it and the invariants are checked
// from the counters every thread sees.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Worker } = require('node:worker_threads');
const path = require('node:path');
const g = require('..');

const WORKERS = 4;
const ROUNDS = 20_000;

const body = `
const { parentPort, workerData } = require('node:worker_threads');
const g = require(${JSON.stringify(path.join(__dirname, '..'))});
const bulkhead = g.Bulkhead.fromShared(workerData.bulkhead);
const breaker = g.CircuitBreaker.fromShared(workerData.breaker);
const budget = g.RetryBudget.fromShared(workerData.budget);
let acquired = 0, refused = 0, overCap = 0, successes = 0, withdrawn = 0;
for (let i = 0; i < ${ROUNDS}; i++) {
  let p;
  try { p = bulkhead.tryAcquire(); } catch (e) { if (e.code !== 'GUARDS_BULKHEAD_FULL') throw e; refused++; continue; }
  acquired++;
  if (bulkhead.inFlight > workerData.cap) overCap++;
  const b = breaker.tryAcquire();
  b.report('success');
  successes++;
  if (budget.withdraw()) withdrawn++;
  p.release();
}
parentPort.postMessage({ acquired, refused, overCap, successes, withdrawn });
`;

test('worker threads hammer one bulkhead, breaker and budget placed in SharedArrayBuffers', async () => {
  const cap = 2;
  const bulkhead = g.Bulkhead.shared({ maxConcurrent: cap });
  const breaker = g.CircuitBreaker.shared({ windowSize: 100 });
  const budget = g.RetryBudget.shared({ capacity: 1000, ratio: 0 });
  assert.ok(bulkhead.sharedMemory instanceof SharedArrayBuffer);
  const results = await Promise.all(Array.from({ length: WORKERS }, () => new Promise((resolve, reject) => {
    const w = new Worker(body, {
      eval: true,
      workerData: { bulkhead: bulkhead.sharedMemory, breaker: breaker.sharedMemory, budget: budget.sharedMemory, cap },
    });
    w.once('message', resolve);
    w.once('error', reject);
  })));
  const sum = (k) => results.reduce((a, r) => a + r[k], 0);
  assert.equal(sum('overCap'), 0, 'never more than the cap inside');
  assert.equal(sum('acquired') + sum('refused'), WORKERS * ROUNDS);
  const s = bulkhead.stats();
  assert.equal(s.acquired, sum('acquired'), 'every acquisition counted once, across threads');
  assert.equal(s.rejected, sum('refused'));
  assert.equal(s.inFlight, 0);
  assert.equal(breaker.stats().successes, sum('successes'));
  assert.equal(sum('withdrawn'), 1000, 'the budget paid out exactly its tokens, across threads');
  assert.equal(budget.stats().withdrawals, 1000);
});

test('shared buffers: attach checks the kind; a buffer is built once', () => {
  const b = g.Bulkhead.shared({ maxConcurrent: 3 });
  assert.equal(g.Bulkhead.fromShared(b.sharedMemory).maxConcurrent, 3);
  assert.throws(() => g.CircuitBreaker.fromShared(b.sharedMemory), (e) => e instanceof TypeError && /another kind/.test(e.message));
  assert.throws(() => g.Bulkhead.fromShared(new SharedArrayBuffer(8)), TypeError);
  assert.throws(() => g.Bulkhead.fromShared(new ArrayBuffer(1024)), TypeError);
  assert.throws(() => new g.Bulkhead({ maxConcurrent: 1 }, new Uint8Array(b.sharedMemory)), (e) => e instanceof TypeError && /already holds/.test(e.message));
  assert.throws(() => new g.Bulkhead({ maxConcurrent: 1 }, new Uint8Array(new SharedArrayBuffer(16))), (e) => e instanceof TypeError && /too small/.test(e.message));
});

const sharedBody = `
const { parentPort, workerData } = require('node:worker_threads');
const g = require(${JSON.stringify(path.join(__dirname, '..'))});
const w = workerData;
const keyed = g.KeyedBreakers.fromShared(w.keyed);
const tracker = g.LatencyTracker.fromShared(w.tracker);
const hedging = g.Hedging.fromShared(w.hedging);
const throttle = g.AdaptiveThrottle.fromShared(w.throttle);
const brownout = g.Brownout.fromShared(w.brownout);
const policy = g.RetryPolicy.fromShared(w.policy);
const backoff = g.Backoff.fromShared(w.backoff);
const budget = g.RetryBudget.fromShared(w.budget);
let keyedCalls = 0, hedges = 0, delays = new Set();
(async () => {
  for (let i = 0; i < ${ROUNDS / 10}; i++) {
    const key = 'host-' + (i % 4);
    await keyed.execute(key, async () => { keyedCalls++; });
    tracker.record(1 + (i % 7));
    hedging.recordLatency(5);
    if (hedging.shouldHedge(0n, 0, true, budget).decision === 'hedge_now') hedges++;
    throttle.shouldReject();
    throttle.report('success');
    brownout.onRefusal('timeout');
    policy.decide(1, 'permanent');
    delays.add(backoff.delayMs(3));
  }
  parentPort.postMessage({ keyedCalls, hedges, distinctDelays: delays.size });
})();
`;

test('every guard of atomics is shared by worker threads: counters add up across threads', async () => {
  const keyed = g.KeyedBreakers.shared({ slots: 16, windowSize: 50 });
  const tracker = g.LatencyTracker.shared({ minSamples: 1 });
  const hedging = g.Hedging.shared({ minSamples: 1, maxHedges: 1, refreshInterval: 0 });
  const throttle = g.AdaptiveThrottle.shared({ minRequests: 1_000_000 });
  const brownout = g.Brownout.shared({ optional: true });
  const policy = g.RetryPolicy.shared({ maxAttempts: 3 });
  const backoff = g.Backoff.shared({ base: 10, cap: 1000, jitter: 'full', seed: 42 });
  const budget = g.RetryBudget.shared({ capacity: 100, ratio: 0 });
  const data = Object.fromEntries(Object.entries({ keyed, tracker, hedging, throttle, brownout, policy, backoff, budget }).map(([k, v]) => [k, v.sharedMemory]));
  for (const v of Object.values(data)) assert.ok(v instanceof SharedArrayBuffer);
  const n = ROUNDS / 10;
  const results = await Promise.all(Array.from({ length: WORKERS }, () => new Promise((resolve, reject) => {
    const w = new Worker(sharedBody, { eval: true, workerData: data });
    w.once('message', resolve);
    w.once('error', reject);
  })));
  const sum = (k) => results.reduce((a, r) => a + r[k], 0);
  assert.equal(sum('keyedCalls'), WORKERS * n);
  assert.equal(keyed.stats().entries, 4, 'four keys, one breaker each, whichever thread made it');
  for (let i = 0; i < 4; i++) assert.equal(keyed.breakerStats(`host-${i}`).successes, WORKERS * n / 4);
  assert.equal(tracker.stats().recorded, WORKERS * n);
  assert.equal(tracker.count(), WORKERS * n);
  assert.equal(sum('hedges'), 100, 'the shared budget paid for exactly its tokens of hedges');
  assert.equal(hedging.stats().hedges, 100);
  assert.equal(budget.stats().withdrawals, 100);
  const ts = throttle.stats();
  assert.equal(ts.admitted + ts.throttled, WORKERS * n);
  assert.equal(ts.accepted, WORKERS * n);
  assert.equal(brownout.stats().degraded, WORKERS * n);
  assert.equal(policy.stats().permanent, WORKERS * n);
  assert.ok(results.every((r) => r.distinctDelays > 1), 'each thread draws from the shared generator');
});

test('QueueDiscipline (one consumer) and RetryDriver (one request) are not shareable', () => {
  assert.equal(typeof g.QueueDiscipline.shared, 'undefined');
  assert.equal(typeof g.RetryDriver.shared, 'undefined');
});

const eventsBody = `
const { parentPort, workerData } = require('node:worker_threads');
const g = require(${JSON.stringify(path.join(__dirname, '..'))});
const breaker = g.CircuitBreaker.fromShared(workerData.breaker);
const limiter = g.Limiter.fromShared(workerData.limiter);
breaker.on('stateChange', (e) => parentPort.postMessage({ heard: 'stateChange', from: e.from, to: e.to }));
limiter.on('limitChange', (e) => parentPort.postMessage({ heard: 'limitChange', to: e.to }));
parentPort.on('message', async (m) => {
  if (m === 'open') {
    for (let i = 0; i < 10; i++) await breaker.execute(async () => { throw Object.assign(new Error('down'), { code: 'ECONNREFUSED' }); }).catch(() => {});
    parentPort.postMessage({ done: 'open' });
  }
  if (m === 'bye') { parentPort.close(); }
});
parentPort.postMessage({ ready: true });
`;

function next(w, pred) {
  return new Promise((resolve, reject) => {
    const on = (m) => { if (pred(m)) { w.off('message', on); resolve(m); } };
    w.on('message', on);
    w.once('error', reject);
  });
}

test('state changes are heard on every thread that shares the guard', async () => {
  const breaker = g.CircuitBreaker.shared({ windowSize: 10, minimumCalls: 10, failureRateThreshold: 0.5, openDuration: 60_000 });
  const limiter = g.Limiter.shared({ limit: { algorithm: 'aimd', initialLimit: 10, interval: 1 } });
  const mainHeard = [];
  breaker.on('stateChange', (e) => mainHeard.push([e.from, e.to]));
  const w = new Worker(eventsBody, { eval: true, workerData: { breaker: breaker.sharedMemory, limiter: limiter.sharedMemory } });
  await next(w, (m) => m.ready);
  // The worker opens the breaker: this thread hears it without calling the breaker.
  const workerHeard = next(w, (m) => m.heard === 'stateChange');
  w.postMessage('open');
  const heard = await workerHeard;
  assert.deepEqual([heard.from, heard.to], ['closed', 'open'], 'the thread that opened it heard it');
  await next(w, (m) => m.done === 'open');
  for (let i = 0; i < 50 && mainHeard.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(mainHeard, [['closed', 'open']], 'the main thread heard it too');
  // And the other way: this thread changes the limiter, the worker hears it.
  const workerLimit = next(w, (m) => m.heard === 'limitChange');
  for (let i = 0; i < 20; i++) {
    await limiter.execute(async () => { throw Object.assign(new Error('x'), { code: 'ETIMEDOUT' }); }).catch(() => {});
    await new Promise((r) => setTimeout(r, 2));
  }
  assert.ok(limiter.limit < 10, `the limit dropped to ${limiter.limit}`);
  const lc = await workerLimit;
  assert.ok(lc.to < 10);
  w.postMessage('bye');
  await w.terminate();
});
