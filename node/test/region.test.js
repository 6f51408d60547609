'use strict';
// Host-wide guards: processes made with child_process.fork share a region's guards. The
// children hammer a bulkhead, one child's failures open a breaker for all, a retry
// budget pays out its tokens once across processes (to retry() and createFetch too),
// throttles, trackers, hedging and brownouts count every process's calls, a child killed
// with SIGKILL while holding permits has them reclaimed. Every assertion counts; none is
// timed.
//
// This file is also the children's program: forked with GUARDS_REGION_CHILD set, it
// obeys its parent's messages instead of running tests.

const path = require('node:path');
const os = require('node:os');
const fs = require('node:fs');
const http = require('node:http');
const { fork } = require('node:child_process');
const g = require('..');

// ---------------------------------------------------------------------------------------
// The child

if (process.env.GUARDS_REGION_CHILD) {
  const region = new g.Region(process.env.GUARDS_REGION_CHILD);
  const held = [];
  const spin = (n) => { let x = 0; for (let i = 0; i < n; i++) x += i; return x; };
  const jobs = {
    // M ops on the shared bulkhead: hold the slot across a little work, check the cap.
    async hammer({ ops, cap }) {
      const bulkhead = region.bulkhead('stock', { maxConcurrent: cap });
      let acquired = 0, refused = 0, overCap = 0, executed = 0, execRefused = 0;
      for (let i = 0; i < ops; i++) {
        if (i % 2 === 0) {
          let p;
          try { p = bulkhead.tryAcquire(); } catch (e) {
            if (e.code !== 'GUARDS_BULKHEAD_FULL') throw e;
            refused++;
            continue;
          }
          acquired++;
          if (bulkhead.inFlight > cap) overCap++;
          spin(2000);
          if (bulkhead.inFlight > cap) overCap++;
          if (!p.release()) throw new Error('a slot released twice');
        } else {
          try {
            await bulkhead.execute(() => {
              if (bulkhead.inFlight > cap) overCap++;
              spin(2000);
            });
            executed++;
          } catch (e) {
            if (e.code !== 'GUARDS_BULKHEAD_FULL') throw e;
            execRefused++;
          }
        }
      }
      return { acquired, refused, overCap, executed, execRefused, outstanding: bulkhead.outstanding };
    },
    // Report failures through the breaker until it refuses.
    async fail({ options }) {
      const breaker = region.circuitBreaker('backend', options);
      let failures = 0;
      for (let i = 0; i < 1000; i++) {
        try {
          await breaker.execute(() => { throw Object.assign(new Error('backend down'), { code: 'ECONNREFUSED' }); });
        } catch (e) {
          if (e.code === 'GUARDS_BREAKER_OPEN') return { failures, state: breaker.state() };
          failures++;
        }
      }
      return { failures, state: breaker.state() };
    },
    // Ask the breaker once: was the call made?
    async ask({ options }) {
      const breaker = region.circuitBreaker('backend', options);
      let called = false;
      let code = null;
      try { await breaker.execute(() => { called = true; }); } catch (e) { code = e.code; }
      return { called, code, state: breaker.state() };
    },
    // Withdraw retries from the shared budget.
    async withdraw({ tries, options }) {
      const budget = region.retryBudget('retries', options);
      let got = 0, min = Infinity, max = -Infinity;
      for (let i = 0; i < tries; i++) {
        budget.deposit();
        const r = budget.withdraw('transient');
        if (r !== null) { got++; budget.report('success', undefined, r); }
        const t = budget.tokens();
        if (t < min) min = t;
        if (t > max) max = t;
      }
      return { got, min, max };
    },
    // Calls that always fail, through retry() paying from the shared budget.
    async retries({ name, options, calls }) {
      const budget = region.retryBudget(name, options);
      const r = new g.Retry({ budget, maxAttempts: 3, backoff: { base: 1, cap: 1 } });
      let budgetGaveUp = 0, otherGaveUp = 0;
      for (let i = 0; i < calls; i++) {
        try {
          await r.execute(async () => { throw new Error('backend down'); });
        } catch (e) {
          if (e instanceof g.BudgetExhaustedError && e.reason === 'budget_exhausted') budgetGaveUp++;
          else if (e instanceof g.RetriesExhaustedError) otherGaveUp++;
          else throw e;
        }
      }
      return { retries: r.stats().retries, attempts: r.stats().attempts, budgetGaveUp, otherGaveUp, isRetryBudget: budget instanceof g.RetryBudget };
    },
    // Calls through createFetch paying from the shared budget (the server always fails).
    async fetchRetries({ name, options, url, calls }) {
      const f = g.createFetch({ maxAttempts: 3, backoff: { base: 1, cap: 1 }, budget: region.retryBudget(name, options), breakers: null });
      const statuses = [];
      for (let i = 0; i < calls; i++) statuses.push((await f(url)).status);
      return { statuses, policy: f.stats().idempotent.policy };
    },
    // Feed the shared throttle: every admitted request is refused by the backend.
    async throttle({ requests }) {
      const t = region.adaptiveThrottle('thr', { minRequests: 5 });
      let admitted = 0;
      for (let i = 0; i < requests; i++) {
        if (!t.shouldReject()) { admitted++; t.report('overloaded'); }
      }
      return { admitted, p: t.rejectProbability() };
    },
    // Record latencies into the shared tracker.
    async track({ ms, n }) {
      const t = region.latencyTracker('lat', { minSamples: 1 });
      for (let i = 0; i < n; i++) t.record(ms);
      return { count: t.count() };
    },
    // Feed the shared hedging policy, then ask for hedges paid by the shared budget.
    async hedge({ ms, n, asks }) {
      const h = region.hedging('hedge', { minSamples: 5 });
      const budget = region.retryBudget('hedge-budget', { capacity: 2, ratio: 0 });
      for (let i = 0; i < n; i++) h.recordLatency(ms);
      const started = g.nowNs() - 10_000_000_000n;
      const decisions = [];
      for (let i = 0; i < asks; i++) { const d = h.shouldHedge(started, 0, true, budget); decisions.push(d.reason ? `${d.decision}:${d.reason}` : d.decision); }
      return { decisions, delay: h.hedgeDelayMs() };
    },
    // Count refusals in the shared brownout.
    async brown({ n }) {
      const b = region.brownout('op', { optional: true });
      const got = [];
      for (let i = 0; i < n; i++) got.push(b.onRefusal('timeout'));
      return { got, stats: b.stats() };
    },
    // Report timeouts through the limiter until its limit drops.
    async timeouts({ options }) {
      const limiter = region.limiter('aimd', options);
      for (let i = 0; i < 200 && limiter.limit >= options.limit.initialLimit; i++) {
        await limiter.execute(async () => { throw Object.assign(new Error('slow'), { code: 'ETIMEDOUT' }); }).catch(() => {});
        await new Promise((r) => setTimeout(r, 2));
      }
      return { limit: limiter.limit };
    },
    // Fail calls to one host through the shared per-host breakers.
    async failHost({ options, host }) {
      const breakers = region.keyedBreakers('hosts', options);
      for (let i = 0; i < 100 && breakers.state(host) === 'closed'; i++) {
        await breakers.execute(host, () => { throw Object.assign(new Error('down'), { code: 'ECONNRESET' }); }).catch(() => {});
      }
      return { state: breakers.state(host) };
    },
    // Create guards with configs the parent does not know.
    async create() {
      region.circuitBreaker('configured', { windowSize: 37, openDuration: 1234 }).execute(() => 1);
      region.limiter('configured-limiter', { limit: 7 });
      return { made: region.guards().length };
    },
    // Fill the shared door with places of priority 1 and keep them.
    async fill({ options, places }) {
      const door = region.admission('door', options);
      for (let i = 0; i < places; i++) held.push(door.tryAcquire(1));
      return { inFlight: door.inFlight, pid: process.pid };
    },
    // Take permits and keep them (until killed).
    async hold({ slots, cap, breakerOptions, limiterOptions }) {
      const bulkhead = region.bulkhead('held', { maxConcurrent: cap });
      for (let i = 0; i < slots; i++) held.push(bulkhead.tryAcquire());
      const fastSlot = bulkhead._guard(); // a permit of the fast path, parked in the object
      held.push(fastSlot);
      if (breakerOptions) held.push(region.circuitBreaker('probe', breakerOptions).tryAcquire());
      if (limiterOptions) held.push(region.limiter('lim', limiterOptions).tryAcquire());
      return { inFlight: bulkhead.inFlight, pid: process.pid };
    },
  };
  process.on('message', async (m) => {
    try {
      process.send({ ok: true, value: await jobs[m.job](m.args) });
    } catch (e) {
      process.send({ ok: false, error: `${e.code || ''} ${e.stack}` });
    }
  });
  process.send({ ready: true });
  return;
}

// ---------------------------------------------------------------------------------------
// The tests

const test = require('node:test');
const assert = require('node:assert/strict');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'guards-region-'));
let n = 0;
const fresh = () => path.join(dir, `r${++n}`);
const children = new Set();

test.after(() => {
  for (const c of children) c.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A forked child on region `file`, ready for jobs. */
function child(file) {
  return new Promise((resolve, reject) => {
    const c = fork(__filename, [], { env: { ...process.env, GUARDS_REGION_CHILD: file }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    children.add(c);
    c.once('exit', () => children.delete(c));
    c.once('error', reject);
    c.once('message', (m) => (m.ready ? resolve(c) : reject(new Error('no ready'))));
  });
}

function job(c, name, args) {
  return new Promise((resolve, reject) => {
    c.once('message', (m) => (m.ok ? resolve(m.value) : reject(new Error(m.error))));
    c.send({ job: name, args });
  });
}

function exited(c) {
  return new Promise((resolve) => {
    if (c.exitCode !== null || c.signalCode !== null) resolve();
    else c.once('exit', () => resolve());
  });
}

async function stop(cs) {
  for (const c of cs) c.kill();
  await Promise.all(cs.map(exited));
}

test('N processes x M ops on one bulkhead: the host-wide cap holds and the counters add up', async () => {
  const file = fresh();
  const N = 4, M = 4000, cap = 2;
  const region = new g.Region(file);
  const bulkhead = region.bulkhead('stock', { maxConcurrent: cap });
  const cs = await Promise.all(Array.from({ length: N }, () => child(file)));
  try {
    const rs = await Promise.all(cs.map((c) => job(c, 'hammer', { ops: M, cap })));
    const sum = (k) => rs.reduce((a, r) => a + r[k], 0);
    assert.equal(sum('overCap'), 0, 'never more than the cap in flight, host-wide');
    assert.equal(sum('acquired') + sum('refused') + sum('executed') + sum('execRefused'), N * M);
    assert.equal(sum('outstanding'), 0);
    const s = bulkhead.stats();
    assert.equal(s.acquired, sum('acquired') + sum('executed'), 'every acquisition counted once, across processes');
    assert.equal(s.rejected, sum('refused') + sum('execRefused'));
    assert.equal(s.released, s.acquired);
    assert.equal(s.inFlight, 0);
    assert.equal(bulkhead.permitsHeld, 0);
    assert.equal(region.stats().permitsHeld, 0);
    assert.ok(s.rejected > 0, `${N} processes on a cap of ${cap} must have been refused sometimes`);
  } finally {
    await stop(cs);
  }
});

test('one process\'s failures open the breaker for every process', async () => {
  const file = fresh();
  const options = { windowSize: 10, minimumCalls: 5, failureRateThreshold: 0.5, openDuration: 60_000 };
  const region = new g.Region(file, { pollInterval: 5 });
  const breaker = region.circuitBreaker('backend', options);
  const heard = new Promise((resolve) => breaker.once('stateChange', resolve));
  const [a, b, c] = await Promise.all([child(file), child(file), child(file)]);
  try {
    const before = await job(b, 'ask', { options });
    assert.deepEqual(before, { called: true, code: null, state: 'closed' });
    const failed = await job(a, 'fail', { options });
    assert.equal(failed.state, 'open');
    // the window holds the other process's success and these failures: 4 of 5 open it
    assert.equal(failed.failures, 4);
    for (const other of [b, c]) {
      const r = await job(other, 'ask', { options });
      assert.deepEqual(r, { called: false, code: 'GUARDS_BREAKER_OPEN', state: 'open' }, 'refused without calling');
    }
    // this process too, and its listener heard it (from the poll: another process opened it)
    let called = false;
    await assert.rejects(breaker.execute(() => { called = true; }), (e) => e instanceof g.BreakerOpenError && e.code === 'GUARDS_BREAKER_OPEN');
    assert.equal(called, false);
    const ev = await heard;
    assert.equal(ev.from, 'closed');
    assert.equal(ev.to, 'open');
    const s = breaker.stats();
    assert.equal(s.failures, failed.failures, 'the failures counted once, host-wide');
    assert.equal(s.closedToOpen, 1);
    assert.equal(s.rejectedOpen, 1 + 2 + 1, 'the failing process\'s last try, two asks and ours');
  } finally {
    await stop([a, b, c]);
  }
});

test('a limiter\'s limit moved by another process is heard here (limitChange)', async () => {
  const file = fresh();
  const options = { limit: { algorithm: 'aimd', initialLimit: 10, interval: 1 } };
  const region = new g.Region(file, { pollInterval: 5 });
  const limiter = region.limiter('aimd', options);
  const heard = new Promise((resolve) => limiter.once('limitChange', resolve));
  const c = await child(file);
  try {
    const r = await job(c, 'timeouts', { options });
    assert.ok(r.limit < 10, `the other process dropped the limit to ${r.limit}`);
    assert.equal(limiter.limit, r.limit, 'one limit for both processes');
    const ev = await heard;
    assert.equal(ev.from, 10);
    assert.ok(ev.to < 10);
    assert.equal(ev.limiter, limiter);
    assert.ok(limiter.stats().dropped >= 1);
  } finally {
    await stop([c]);
  }
});

test('keyed breakers: one process\'s failures open a host\'s breaker for all, createFetch takes them', async () => {
  const file = fresh();
  const options = { windowSize: 10, minimumCalls: 5, failureRateThreshold: 0.5, openDuration: 60_000, slots: 16 };
  const region = new g.Region(file, { pollInterval: 5 });
  const breakers = region.keyedBreakers('hosts', options);
  let calls = 0;
  const server = http.createServer((req, res) => { calls++; res.end('ok'); });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${server.address().port}`;
  const heard = new Promise((resolve) => breakers.once('stateChange', resolve));
  const c = await child(file);
  try {
    const f = g.createFetch({ breakers, maxAttempts: 1 });
    assert.equal((await f(`${origin}/`)).status, 200);
    assert.equal(calls, 1);
    const r = await job(c, 'failHost', { options, host: origin });
    assert.equal(r.state, 'open');
    assert.equal(breakers.state(origin), 'open', 'this process sees the other\'s breaker for the host');
    assert.equal(breakers.state('http://elsewhere:1'), 'closed');
    await assert.rejects(f(`${origin}/`), (e) => e instanceof g.BreakerOpenError);
    assert.equal(calls, 1, 'refused without calling the host');
    const ev = await heard;
    assert.equal(ev.to, 'open');
    assert.equal(ev.keyId, g.KeyedBreakers.keyOf(origin));
    assert.equal(breakers.stats().open, 1);
    // the window: this process's success and the other's failures, 4 of 5 open it
    assert.equal(breakers.breakerStats(origin).failures, 4);
    assert.equal(breakers.breakerStats(origin).successes, 1);
    assert.ok(region.attach('hosts') instanceof g.RegionKeyedBreakers);
  } finally {
    await stop([c]);
    await new Promise((r) => server.close(r));
  }
});

test('a retry budget pays out its tokens once across processes and stays in bounds', async () => {
  const file = fresh();
  const options = { capacity: 40, ratio: 0.1 };
  const region = new g.Region(file);
  const budget = region.retryBudget('retries', options);
  const cs = await Promise.all(Array.from({ length: 3 }, () => child(file)));
  try {
    const tries = 500;
    const rs = await Promise.all(cs.map((c) => job(c, 'withdraw', { tries, options })));
    const got = rs.reduce((a, r) => a + r.got, 0);
    for (const r of rs) {
      assert.ok(r.min >= 0, `tokens never below 0 (saw ${r.min})`);
      assert.ok(r.max <= options.capacity, `tokens never above the capacity (saw ${r.max})`);
    }
    const s = budget.stats();
    assert.equal(s.deposits, 3 * tries);
    assert.equal(s.withdrawals, got);
    assert.equal(s.withdrawals + s.refusals, 3 * tries);
    // at most the starting capacity plus what the deposits earned (0.1 each)
    assert.ok(got <= options.capacity + 0.1 * 3 * tries + 1e-9, `${got} retries`);
    assert.ok(got >= options.capacity, `${got} retries: at least the starting tokens`);
    const t = budget.tokens();
    assert.ok(t >= 0 && t <= options.capacity);
  } finally {
    await stop(cs);
  }
});

test('retry() in 4 processes on one region budget: the withdrawals add up to what it allows', async () => {
  const file = fresh();
  const options = { capacity: 20, ratio: 0 };
  const region = new g.Region(file);
  const budget = region.retryBudget('retries', options);
  assert.ok(budget instanceof g.RetryBudget, 'a region budget is a RetryBudget');
  assert.ok(budget instanceof g.RegionRetryBudget);
  const N = 4, calls = 10;
  const cs = await Promise.all(Array.from({ length: N }, () => child(file)));
  try {
    const rs = await Promise.all(cs.map((c) => job(c, 'retries', { name: 'retries', options, calls })));
    const sum = (k) => rs.reduce((a, r) => a + r[k], 0);
    assert.ok(rs.every((r) => r.isRetryBudget));
    const s = budget.stats();
    // 4 x 10 calls wanting 2 retries each ask for 80: the 20 tokens pay for exactly 20
    assert.equal(sum('retries'), options.capacity, 'every token paid for one retry, none twice');
    assert.equal(s.withdrawals, sum('retries'), 'the region counted every process\'s retries');
    assert.equal(s.deposits, N * calls, 'one deposit per call, all processes');
    assert.equal(s.refusals, sum('budgetGaveUp'), 'each refusal ended one call with budget_exhausted');
    assert.equal(sum('budgetGaveUp') + sum('otherGaveUp'), N * calls);
    assert.equal(sum('attempts'), N * calls + sum('retries'));
    assert.ok(sum('budgetGaveUp') > 0);
    assert.equal(budget.tokens(), 0);
  } finally {
    await stop(cs);
  }
});

test('a region budget spent by one process refuses retries in another', async () => {
  const file = fresh();
  const options = { capacity: 2, ratio: 0 };
  const region = new g.Region(file);
  const budget = region.retryBudget('retries', options);
  const [a, b] = await Promise.all([child(file), child(file)]);
  try {
    const spent = await job(a, 'retries', { name: 'retries', options, calls: 1 });
    assert.deepEqual([spent.retries, spent.otherGaveUp, spent.budgetGaveUp], [2, 1, 0], 'the first process retried twice');
    const refused = await job(b, 'retries', { name: 'retries', options, calls: 3 });
    assert.equal(refused.retries, 0, 'no retry left for the other process');
    assert.equal(refused.budgetGaveUp, 3, 'every call gave up with budget_exhausted');
    assert.equal(refused.attempts, 3);
    // this process too: retry() and the policy's gate see the empty budget
    await assert.rejects(g.retry(async () => { throw new Error('x'); }, { budget, maxAttempts: 3 }),
      (e) => e instanceof g.BudgetExhaustedError && e.reason === 'budget_exhausted');
    assert.deepEqual(new g.RetryPolicy().decide(1, 'timeout', { gate: budget }), { retry: false, reason: 'budget_exhausted' });
    const s = budget.stats();
    assert.equal(s.withdrawals, 2);
    assert.equal(s.refusals, 3 + 1 + 1);
  } finally {
    await stop([a, b]);
  }
});

test('createFetch({ budget: region.retryBudget(...) }): another process\'s retries are charged to the shared budget', async () => {
  const file = fresh();
  const options = { capacity: 3, ratio: 0 };
  const region = new g.Region(file);
  const budget = region.retryBudget('fetch-retries', options);
  let calls = 0;
  const server = http.createServer((req, res) => { calls++; res.writeHead(500); res.end(); });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${server.address().port}/`;
  const c = await child(file);
  try {
    const r = await job(c, 'fetchRetries', { name: 'fetch-retries', options, url, calls: 2 });
    assert.deepEqual(r.statuses, [500, 500], 'the last answer is returned');
    // call 1: 3 attempts (2 tokens); call 2: 2 attempts (the last token), then refused
    assert.equal(calls, 5);
    assert.equal(r.policy.budgetExhausted, 1);
    assert.equal(budget.stats().withdrawals, 3, 'the other process\'s retries, seen here');
    assert.equal(budget.stats().refusals, 1);
    // this process's createFetch on the same budget: no retry left
    calls = 0;
    const f = g.createFetch({ maxAttempts: 3, backoff: { base: 1, cap: 1 }, budget, breakers: null });
    assert.equal(f.budget, budget);
    assert.equal((await f(url)).status, 500);
    assert.equal(calls, 1, 'no token left host-wide: no retry');
    assert.equal(budget.stats().refusals, 2);
    // the driver takes it too
    const d = new g.RetryDriver(new g.RetryPolicy(), { budget });
    assert.ok(d instanceof g.RetryDriver);
  } finally {
    await stop([c]);
    await new Promise((r) => server.close(r));
  }
});

test('an adaptive throttle fed by one process rejects in another', async () => {
  const file = fresh();
  const region = new g.Region(file);
  const t = region.adaptiveThrottle('thr', { minRequests: 5 });
  assert.ok(t instanceof g.AdaptiveThrottle);
  assert.equal(t.rejectProbability(), 0);
  const c = await child(file);
  try {
    const r = await job(c, 'throttle', { requests: 100 });
    assert.ok(r.p > 0.5, `the backend refused everything: p = ${r.p}`);
    assert.ok(t.rejectProbability() > 0.5, 'this process sees the other\'s rejects');
    assert.equal(t.window().requests, 100);
    assert.equal(t.window().accepts, 0);
    const s = t.stats();
    assert.equal(s.admitted, r.admitted);
    assert.equal(s.rejectedByBackend, r.admitted);
    assert.equal(s.admitted + s.throttled, 100);
    let rejected = 0;
    for (let i = 0; i < 50; i++) if (t.shouldReject()) rejected++;
    assert.ok(rejected > 0, 'this process throttles too');
  } finally {
    await stop([c]);
  }
});

test('a latency tracker fed by two processes: both processes\' samples in the count and the percentiles', async () => {
  const file = fresh();
  const region = new g.Region(file);
  const t = region.latencyTracker('lat', { minSamples: 1 });
  assert.ok(t instanceof g.LatencyTracker);
  for (let i = 0; i < 30; i++) t.record(5);
  const c = await child(file);
  try {
    const r = await job(c, 'track', { ms: 200, n: 10 });
    assert.equal(r.count, 40, 'the other process sees this one\'s samples');
    assert.equal(t.count(), 40);
    assert.equal(t.stats().recorded, 40);
    const p50 = t.quantileMs(0.5), p99 = t.quantileMs(0.99);
    assert.ok(Math.abs(p50 - 5) <= 5 / 32, `p50 ${p50} is this process's 5 ms`);
    assert.ok(Math.abs(p99 - 200) <= 200 / 32, `p99 ${p99} is the other process's 200 ms`);
  } finally {
    await stop([c]);
  }
});

test('hedging: the latency samples and the hedge budget are shared', async () => {
  const file = fresh();
  const region = new g.Region(file);
  const h = region.hedging('hedge', { minSamples: 5 });
  const budget = region.retryBudget('hedge-budget', { capacity: 2, ratio: 0 });
  assert.ok(h instanceof g.Hedging);
  // (not asked for its delay here first: the delay is refreshed every refreshInterval,
  // and a refresh with no samples would stand until the next one)
  assert.equal(h.stats().hedges, 0);
  const c = await child(file);
  try {
    const r = await job(c, 'hedge', { ms: 100, n: 20, asks: 3 });
    assert.deepEqual(r.decisions, ['hedge_now', 'hedge_now', 'never:budget_exhausted'], 'two tokens, two hedges');
    const delay = h.hedgeDelayMs();
    assert.ok(delay !== null && Math.abs(delay - 100) <= 100 / 32, `this process's hedge delay ${delay} comes from the other's samples`);
    assert.equal(delay, r.delay);
    const s = h.stats();
    assert.equal(s.hedges, 2);
    assert.equal(s.budgetExhausted, 1);
    assert.equal(budget.stats().withdrawals, 2);
    assert.deepEqual(h.shouldHedge(g.nowNs() - 10_000_000_000n, 0, true, budget), { decision: 'never', reason: 'budget_exhausted' });
  } finally {
    await stop([c]);
  }
});

test('a brownout\'s counters are every process\'s', async () => {
  const file = fresh();
  const region = new g.Region(file);
  const b = region.brownout('op', { optional: true });
  assert.ok(b instanceof g.Brownout);
  assert.equal(b.onRefusal('timeout'), 'serve_fallback');
  const c = await child(file);
  try {
    const r = await job(c, 'brown', { n: 4 });
    assert.deepEqual(r.got, Array(4).fill('serve_fallback'));
    assert.deepEqual(b.stats(), r.stats, 'one set of counters');
    assert.equal(b.stats().degraded, 5, 'this process\'s refusal and the other\'s four');
  } finally {
    await stop([c]);
  }
});

test('guarded() takes a region throttle, brownout and budget as it takes private ones', async () => {
  const region = new g.Region(fresh());
  const throttle = region.adaptiveThrottle('thr', { minRequests: 1 });
  const brownout = region.brownout('op', { optional: true });
  const budget = region.retryBudget('rb', { capacity: 1, ratio: 0 });
  const stack = g.guarded([throttle], { brownout, fallback: 'cached', retry: { budget, maxAttempts: 3, backoff: { base: 1, cap: 1 } } });
  let calls = 0;
  assert.equal(await stack.execute(async () => { calls++; throw Object.assign(new Error('busy'), { status: 503 }); }), 'cached');
  assert.equal(calls, 2, 'one retry: the budget\'s one token');
  assert.equal(budget.stats().withdrawals, 1);
  assert.equal(budget.stats().refusals, 1);
  assert.equal(throttle.stats().admitted, 2);
  assert.equal(region.brownout('op', { optional: true }).stats().degraded, 1, 'the fallback counted in the region');
});

test('the new kinds: mismatch of kind and config, bad options, attach', () => {
  const region = new g.Region(fresh());
  const isType = (option) => (e) => e instanceof TypeError && e.option === option && e.code === 'GUARDS_INVALID_OPTION';
  const isRange = (option) => (e) => e instanceof RangeError && e.option === option;
  const mismatch = (field) => (e) => e instanceof g.GuardMismatchError && e.code === 'GUARDS_GUARD_MISMATCH' && e.field === field;
  region.latencyTracker('lat', { window: 2000 });
  region.hedging('hedge', { maxHedges: 2 });
  region.adaptiveThrottle('thr', { k: 3 });
  region.brownout('op', { optional: false });
  region.retryBudget('rb', { capacity: 5 });
  assert.throws(() => region.hedging('lat'), mismatch('kind'));
  assert.throws(() => region.latencyTracker('hedge'), mismatch('kind'));
  assert.throws(() => region.brownout('thr'), mismatch('kind'));
  assert.throws(() => region.adaptiveThrottle('op'), mismatch('kind'));
  assert.throws(() => region.retryBudget('op'), mismatch('kind'));
  assert.throws(() => region.bulkhead('rb'), mismatch('kind'));
  assert.throws(() => region.latencyTracker('lat', { window: 3000 }), mismatch('config'));
  assert.throws(() => region.hedging('hedge', { maxHedges: 1 }), mismatch('config'));
  assert.throws(() => region.adaptiveThrottle('thr', { k: 2 }), mismatch('config'));
  assert.throws(() => region.brownout('op', { optional: true }), mismatch('config'));
  assert.throws(() => region.retryBudget('rb', { capacity: 6 }), mismatch('config'));
  assert.equal(region.latencyTracker('lat', { window: 2000 }).count(), 0, 'the same config attaches');
  // a config mismatch names the options that differ, with both values (as options spell them)
  const differs = (expected) => (e) => {
    assert.ok(e instanceof g.GuardMismatchError && e.field === 'config', e.message);
    assert.deepEqual(e.differences, expected);
    for (const k of Object.keys(expected)) assert.match(e.message, new RegExp(`\`${k.replace('.', '\\.')}\``));
    return true;
  };
  assert.throws(() => region.latencyTracker('lat', { window: 3000 }), differs({ window: { existing: 2000, requested: 3000 } }));
  assert.throws(() => region.hedging('hedge', { maxHedges: 1 }), differs({ maxHedges: { existing: 2, requested: 1 } }));
  assert.throws(() => region.adaptiveThrottle('thr', { k: 2 }), differs({ k: { existing: 3, requested: 2 } }));
  assert.throws(() => region.brownout('op', { optional: true }), differs({ optional: { existing: false, requested: true } }));
  assert.throws(() => region.retryBudget('rb', { capacity: 6, ratio: 0.2 }), differs({ capacity: { existing: 5, requested: 6 }, ratio: { existing: 0.1, requested: 0.2 } }));
  assert.throws(() => region.retryBudget('rb', { mode: 'grpc' }), differs({ mode: { existing: 'token_bucket', requested: 'grpc' } }));
  // the package classes' own option checks
  assert.throws(() => region.hedging('x', { delayQuantile: 2 }), isRange('delayQuantile'));
  assert.throws(() => region.hedging('x', { delayQuantil: 0.9 }), isType('delayQuantil'));
  assert.throws(() => region.latencyTracker('x', { window: -1 }), isRange('window'));
  assert.throws(() => region.latencyTracker('x', { window: 'long' }), isType('window'));
  assert.throws(() => region.adaptiveThrottle('x', { k: 'two' }), isType('k'));
  assert.throws(() => region.adaptiveThrottle('x', { maxRejectProbability: 2 }), isRange('maxRejectProbability'));
  assert.throws(() => region.brownout('x', { optional: 'yes' }), isType('optional'));
  assert.throws(() => region.brownout('x', { fallbackOn: ['nothing'] }), isType('fallbackOn[0]'));
  assert.throws(() => region.retryBudget('x', { ratio: -1 }), isRange('ratio'));
  assert.throws(() => region.hedging(5), isType('name'));
  assert.throws(() => region.brownout(''), isRange('name'));
  assert.throws(() => region.latencyTracker('x', 'wide'), isType('options'));
  assert.throws(() => new g.RegionHedging({}, 'x'), isType('region'));
  assert.throws(() => new g.RegionRetryBudget(null, 'x'), isType('region'));
  assert.throws(() => new g.RegionLatencyTracker(region, 'lat', { window: 2000 }, true), isType('options'));
  assert.throws(() => new g.RegionBrownout(region, 'op', undefined, 1), isType('attach'));
  assert.throws(() => g.RegionHedging.shared({}), isType('shared'));
  assert.throws(() => g.RegionRetryBudget.fromShared(new SharedArrayBuffer(8)), isType('buffer'));
  assert.throws(() => new g.RetryBudget(undefined, region._hedging('hedge', undefined, true)), isType('shared'));
  assert.throws(() => new g.Hedging({}, region._hedging('hedge', undefined, true)), isType('options'));
  assert.equal(region.guards().length, 5, 'no refused call created a guard');
  // attach: the existing guard, whatever its config, as the class of its kind
  const kinds = { lat: g.RegionLatencyTracker, hedge: g.RegionHedging, thr: g.RegionAdaptiveThrottle, op: g.RegionBrownout, rb: g.RegionRetryBudget };
  for (const [name, C] of Object.entries(kinds)) {
    const x = region.attach(name);
    assert.ok(x instanceof C, `${name}: ${x.constructor.name}`);
    assert.equal(x.name, name);
    assert.equal(x.region, region);
    assert.equal(x.sharedMemory, undefined);
  }
  assert.equal(region.attach('op').optional, false);
  assert.deepEqual(region.guards().map((x) => x.kind).sort(), ['adaptive_throttle', 'brownout', 'hedging', 'latency_tracker', 'retry_budget']);
});

test('SIGKILL of a process holding permits: reclaim gives them back', async () => {
  const file = fresh();
  const region = new g.Region(file, { reclaimInterval: 0 });
  const cap = 4;
  const bulkhead = region.bulkhead('held', { maxConcurrent: cap });
  const breakerOptions = { windowSize: 10, minimumCalls: 2, openDuration: 1, halfOpenProbes: 1 };
  const limiterOptions = { limit: 3 };
  const breaker = region.circuitBreaker('probe', breakerOptions);
  const limiter = region.limiter('lim', limiterOptions);
  // open the breaker, wait out its 1 ms open period: the child's call will be the only probe
  for (let i = 0; i < 2; i++) await breaker.execute(() => { throw new Error('down'); }).catch(() => {});
  assert.equal(breaker.status().state, 'open');
  while (breaker.state() !== 'half_open') await new Promise((r) => setImmediate(r));

  const c = await child(file);
  const r = await job(c, 'hold', { slots: 2, cap, breakerOptions, limiterOptions });
  assert.equal(r.inFlight, 3, 'two permits and one fast-path slot');
  assert.equal(bulkhead.inFlight, 3);
  assert.equal(bulkhead.permitsHeld, 3);
  assert.equal(limiter.inFlight, 1);
  assert.equal(breaker.permitsHeld, 1);
  assert.equal(region.stats().permitsHeld, 5);
  await assert.rejects(breaker.execute(() => 1), (e) => e.code === 'GUARDS_BREAKER_HALF_OPEN_FULL');

  process.kill(r.pid, 'SIGKILL');
  await exited(c);
  const back = region.reclaim();
  assert.equal(back.permits, 5, 'every permit of the dead process');
  assert.equal(bulkhead.inFlight, 0);
  assert.equal(bulkhead.permitsHeld, 0);
  assert.equal(limiter.inFlight, 0);
  assert.equal(region.stats().permitsHeld, 0);
  assert.equal(region.stats().reclaimedPermits, 5);
  // the abandoned probe failed: the breaker re-opened
  assert.equal(breaker.status().state, 'open');
  assert.equal(breaker.stats().halfOpenToOpen, 1);
  assert.equal(region.reclaim().permits, 0, 'a permit comes back once');
});

test('SIGKILL: the next acquire that finds the bulkhead full reclaims by itself', async () => {
  const file = fresh();
  const region = new g.Region(file, { reclaimInterval: 0 });
  const bulkhead = region.bulkhead('held', { maxConcurrent: 2 });
  const c = await child(file);
  const r = await job(c, 'hold', { slots: 1, cap: 2 });
  assert.equal(bulkhead.available, 0);
  process.kill(r.pid, 'SIGKILL');
  await exited(c);
  // full: the acquire scans, finds the dead holder, and is asked again
  assert.equal(await bulkhead.execute(() => 'through'), 'through');
  assert.equal(bulkhead.inFlight, 0);
  assert.equal(region.stats().reclaimedPermits, 2);
});

test('one admission door for every process: the middleware refuses when another process fills it', async () => {
  const file = fresh();
  const options = { limits: [4, 3, 3, 3, 3, 3, 3, 3] };
  const region = new g.Region(file, { reclaimInterval: 0 });
  const door = region.admission('door', options);
  const server = http.createServer(g.httpAdmission(door, (req, res) => res.end('in'), { priority: 1 }));
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const get = () => new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port: server.address().port, path: '/', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, retryAfter: res.headers['retry-after'] }));
    }).on('error', reject);
  });
  const c = await child(file);
  try {
    assert.equal((await get()).status, 200);
    const r = await job(c, 'fill', { options, places: 3 });
    assert.equal(r.inFlight, 3);
    assert.equal(door.inFlight, 3, 'this process sees the other\'s places');
    const refused = await get();
    assert.equal(refused.status, 503, 'priority 1 is full host-wide');
    assert.ok(Number(refused.retryAfter) >= 1);
    assert.throws(() => door.tryAcquire(1), (e) => e instanceof g.AdmissionRejectedError);
    const p0 = door.tryAcquire(0); // priority 0 has room up to 4
    p0.report('success');
    process.kill(r.pid, 'SIGKILL');
    await exited(c);
    // the door is full for priority 1: the next request's acquire reclaims the dead places
    assert.equal((await get()).status, 200);
    assert.equal(door.inFlight, 0);
    const s = door.stats();
    assert.equal(s.admitted, 1 + 3 + 1 + 1);
    assert.ok(s.refusedLimitReached >= 2);
  } finally {
    await stop([c]);
    await new Promise((r) => server.close(r));
  }
});

test('attach: the existing guard whatever its config, as the class of its kind', async () => {
  const file = fresh();
  const region = new g.Region(file);
  const c = await child(file);
  try {
    await job(c, 'create', {});
  } finally {
    await stop([c]);
  }
  const b = region.attach('configured');
  assert.ok(b instanceof g.RegionCircuitBreaker);
  assert.equal(b.config.windowSize, 37);
  assert.equal(b.config.openDuration, 1234);
  assert.equal(b.stats().successes, 1, 'the other process\'s call');
  assert.equal(await b.execute(() => 'here'), 'here');
  assert.equal(region.lookup('configured').kind, 'circuit_breaker');
  const l = region.attach('configured-limiter');
  assert.ok(l instanceof g.RegionLimiter);
  assert.equal(l.limit, 7);
  assert.throws(() => region.attach('nobody'), (e) => e instanceof g.RegionError && e.code === 'GUARDS_GUARD_NOT_FOUND');
  assert.throws(() => new g.RegionBulkhead(region, 'configured', undefined, true), (e) => e.code === 'GUARDS_GUARD_MISMATCH' && e.field === 'kind');
  assert.throws(() => new g.RegionCircuitBreaker(region, 'configured-limiter', undefined, true), (e) => e.code === 'GUARDS_GUARD_MISMATCH' && e.field === 'kind');
  assert.throws(() => new g.RegionCircuitBreaker(region, 'configured', { windowSize: 37 }, true), (e) => e instanceof TypeError && e.option === 'options');
  assert.throws(() => new g.RegionCircuitBreaker(region, 'configured', undefined, 'yes'), (e) => e instanceof TypeError && e.option === 'attach');
});

test('a limit that differs is named as the options spell it: a number, an algorithm, or one option', () => {
  const region = new g.Region(fresh());
  const differs = (expected) => (e) => {
    assert.ok(e instanceof g.GuardMismatchError && e.field === 'config', e.message);
    assert.deepEqual(e.differences, expected);
    for (const k of Object.keys(expected)) assert.match(e.message, new RegExp(`\`${k.replace('.', '\\.')}\``));
    return true;
  };
  region.limiter('fixed', { limit: 4 });
  assert.throws(() => region.limiter('fixed', { limit: 5 }), differs({ limit: { existing: 4, requested: 5 } }));
  assert.throws(() => region.limiter('fixed', { limit: { algorithm: 'aimd' } }),
    differs({ 'limit.algorithm': { existing: 'fixed', requested: 'aimd' } }));
  region.admission('door', { limit: { algorithm: 'aimd', initialLimit: 10 } });
  assert.throws(() => region.admission('door', { limit: { algorithm: 'aimd', initialLimit: 12 } }),
    differs({ 'limit.initialLimit': { existing: 10, requested: 12 } }));
  assert.equal(region.admission('door', { limit: { algorithm: 'aimd', initialLimit: 10 } }).name, 'door', 'the same limit attaches');
});

test('a name with another kind or config is refused with GUARDS_GUARD_MISMATCH', () => {
  const region = new g.Region(fresh());
  region.bulkhead('x', { maxConcurrent: 2 });
  assert.equal(region.bulkhead('x', { maxConcurrent: 2 }).maxConcurrent, 2, 'the same config attaches');
  assert.throws(() => region.bulkhead('x', { maxConcurrent: 3 }), (e) => e instanceof g.GuardMismatchError
    && e instanceof g.RegionError && e.code === 'GUARDS_GUARD_MISMATCH' && e.field === 'config'
    && e.differences.maxConcurrent.existing === 2 && e.differences.maxConcurrent.requested === 3);
  assert.throws(() => region.circuitBreaker('x'), (e) => e.code === 'GUARDS_GUARD_MISMATCH'
    && e.field === 'kind' && /it is a bulkhead, not a circuit_breaker/.test(e.message));
  assert.throws(() => region.retryBudget('x'), (e) => e.code === 'GUARDS_GUARD_MISMATCH');
  region.circuitBreaker('b', { windowSize: 100 });
  assert.throws(() => region.circuitBreaker('b', { windowSize: 100, openDuration: 1000 }), (e) => e.field === 'config'
    && e.differences.openDuration.requested === 1000 && /`openDuration` is 5000 there, 1000 here/.test(e.message));
  assert.throws(() => region.circuitBreaker('b', { windowSize: 100, capacity: 1024 }), (e) => e.code === 'GUARDS_GUARD_MISMATCH');
  const listed = region.guards().map((x) => `${x.name}:${x.kind}`).sort();
  assert.deepEqual(listed, ['b:circuit_breaker', 'x:bulkhead']);
  assert.equal(region.stats().guards, 2);
});

test('a second region is independent; two objects of one name are one guard', async () => {
  const one = new g.Region(fresh());
  const two = new g.Region(fresh());
  const a = one.bulkhead('db', { maxConcurrent: 1 });
  const a2 = one.bulkhead('db', { maxConcurrent: 1 });
  const b = two.bulkhead('db', { maxConcurrent: 1 });
  const p = a.tryAcquire();
  assert.equal(a2.inFlight, 1, 'the same guard through another object');
  assert.throws(() => a2.tryAcquire(), (e) => e instanceof g.BulkheadFullError && e.inFlight === 1 && e.maxConcurrent === 1);
  assert.equal(b.inFlight, 0, 'the other region\'s guard of the same name');
  const q = b.tryAcquire();
  assert.equal(p.report('success'), 'release');
  assert.throws(() => p.report('success'), (e) => e.code === 'GUARDS_PERMIT_ALREADY_REPORTED');
  assert.equal(q.release(), true);
  assert.equal(q.release(), false);
  assert.equal(one.stats().permitsHeld, 0);
  assert.equal(two.stats().permitsHeld, 0);
  // the limiter and its events from this process
  const lim = one.limiter('l', { limit: 2 });
  assert.equal(await lim.execute(() => 7, { priority: 3 }), 7);
  assert.equal(lim.stats().acquired, 1);
  assert.equal(lim.limit, 2);
  // region guards compose with guarded() like the private ones
  const plan = g.guarded([one.circuitBreaker('cb'), a, lim]);
  assert.equal(await plan.execute(() => 'ok'), 'ok');
  assert.equal(a.stats().acquired, 2);
  assert.equal(one.circuitBreaker('cb').stats().successes, 1);
  assert.equal(one.stats().permitsHeld, 0);
});

test('Region.open with create: false, Region.remove', () => {
  const file = fresh();
  assert.throws(() => g.Region.open(file, { create: false }), (e) => e instanceof g.RegionError && e.code === 'GUARDS_GUARD_NOT_FOUND');
  const r = g.Region.open(file);
  assert.equal(r.path, file);
  assert.ok(g.Region.open(file, { create: false }) instanceof g.Region);
  g.Region.remove(file);
  assert.equal(fs.existsSync(file), false);
  assert.throws(() => g.Region.remove(file), (e) => e.code === 'GUARDS_GUARD_NOT_FOUND');
  assert.throws(() => fs.writeFileSync(file, 'not a region') || new g.Region(file), (e) => e.code === 'GUARDS_REGION_INVALID');
});

test('bad input: TypeError / RangeError naming the option', () => {
  const isType = (option) => (e) => e instanceof TypeError && e.option === option && e.code === 'GUARDS_INVALID_OPTION';
  const isRange = (option) => (e) => e instanceof RangeError && e.option === option;
  assert.throws(() => new g.Region(), isType('path'));
  assert.throws(() => new g.Region(42), isType('path'));
  assert.throws(() => new g.Region(''), isRange('path'));
  assert.throws(() => new g.Region(fresh(), 'big'), isType('options'));
  assert.throws(() => new g.Region(fresh(), { maxGuard: 4 }), isType('maxGuard'));
  assert.throws(() => new g.Region(fresh(), { maxGuards: 0 }), isRange('maxGuards'));
  assert.throws(() => new g.Region(fresh(), { permitSlots: 1.5 }), isRange('permitSlots'));
  assert.throws(() => new g.Region(fresh(), { dataBytes: 'lots' }), isType('dataBytes'));
  assert.throws(() => new g.Region(fresh(), { waitTimeout: -1 }), isRange('waitTimeout'));
  assert.throws(() => new g.Region(fresh(), { reclaimInterval: 'soon' }), isType('reclaimInterval'));
  assert.throws(() => new g.Region(fresh(), { mode: 0o1777 }), isRange('mode'));
  assert.throws(() => new g.Region(fresh(), { create: 1 }), isType('create'));
  assert.throws(() => new g.Region(fresh(), { pollInterval: 0 }), isRange('pollInterval'));
  assert.throws(() => new g.Region(fresh(), { pollInterval: '1' }), isType('pollInterval'));
  const region = new g.Region(fresh());
  assert.throws(() => region.bulkhead(7), isType('name'));
  assert.throws(() => region.bulkhead(''), isRange('name'));
  assert.throws(() => region.bulkhead('n'.repeat(65)), isRange('name'));
  assert.throws(() => region.bulkhead('ok', { maxConcurrent: -1 }), isRange('maxConcurrent'));
  assert.throws(() => region.circuitBreaker('ok', { windowSise: 5 }), isType('windowSise'));
  assert.throws(() => region.circuitBreaker('ok', { failureRateThreshold: 2 }), isRange('failureRateThreshold'));
  assert.throws(() => region.retryBudget('ok', { mode: 'lots' }), isRange('mode'));
  assert.throws(() => region.limiter('ok', { limit: 'x' }), (e) => e instanceof TypeError);
  assert.throws(() => new g.RegionBulkhead({}, 'x'), isType('region'));
  const b = region.bulkhead('fine', { maxConcurrent: 1 });
  assert.throws(() => b.execute('no'), isType('fn'));
  const br = region.circuitBreaker('br');
  assert.throws(() => br.tryAcquire(5), isType('now'));
  const p = br.tryAcquire();
  assert.throws(() => p.report('maybe'), (e) => e instanceof TypeError);
  assert.equal(p.done, false, 'a refused report leaves the permit unreported');
  p.report('success');
  const budget = region.retryBudget('rb');
  const other = region.retryBudget('rb');
  const receipt = budget.withdraw();
  assert.ok(receipt);
  assert.throws(() => other.report('success', undefined, receipt), (e) => e.code === 'GUARDS_PERMIT_WRONG_GUARD');
  assert.throws(() => budget.report('success', undefined, {}), isType('receipt'));
  assert.equal(budget.report('success', undefined, receipt), 'success');
  assert.throws(() => budget.report('success', undefined, receipt), (e) => e.code === 'GUARDS_PERMIT_ALREADY_REPORTED');
});

test('a full permit table says so: GUARDS_PERMIT_SLOTS_EXHAUSTED', async () => {
  const region = new g.Region(fresh(), { permitSlots: 2 });
  const b = region.bulkhead('b', { maxConcurrent: 10 });
  const p1 = b.tryAcquire();
  const p2 = b.tryAcquire();
  assert.throws(() => b.tryAcquire(), (e) => e instanceof g.RegionError && e.code === 'GUARDS_PERMIT_SLOTS_EXHAUSTED');
  await assert.rejects(b.execute(() => 1), (e) => e.code === 'GUARDS_PERMIT_SLOTS_EXHAUSTED');
  assert.equal(b.inFlight, 2, 'the guard was left as if not asked');
  p1.release();
  p2.release();
  assert.equal(await b.execute(() => 2), 2);
});
