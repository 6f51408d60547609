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
