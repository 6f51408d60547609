'use strict';
// Overhead of a guarded no-op promise: guards beside opossum and cockatiel, in one run,
// rounds interleaved (each round times every contender once, in turn), so load from
// elsewhere lands on all alike. Overhead = time per call minus the bare `await noop()`
// measured in the same round; the ratios are peer overhead / guards overhead.
//
// `floor` is the least any wrapper of a promise-returning call can cost: `fn()` and a
// `.then` with a fulfilment and a rejection closure (what every contender does, at least),
// with no guard at all. The parts of guards' own cost are measured beside it, in the same
// run: one native call (a fast function that finds nothing to do), a permit taken and
// given back (bulkhead: two native calls) and a breaker's (two native calls and two reads
// of CLOCK_MONOTONIC; none for a breaker that does not time its calls), synchronously,
// and the same through the paths `execute` takes (an untimed breaker's mirror: one native
// call; a bulkhead's permits held by count).
//
//   node bench/overhead.js [rounds] [callsPerRound]

const g = require('..');
const Opossum = require('opossum');
const cockatiel = require('cockatiel');

const ROUNDS = Number(process.argv[2] || 9);
const N = Number(process.argv[3] || 100_000);
const noop = async () => 1;
const ok = (v) => v;
const fail = (e) => { throw e; };
/** The floor: a wrapper that does nothing but wait for the promise (two fresh closures). */
const floor = (fn) => { const t = 1; return fn().then((v) => ok(v, t), (e) => fail(e, t)); };

const gBreaker = new g.CircuitBreaker();
// No slow-call timing (the largest slowCallDuration: never slow), as cockatiel's and
// opossum's breakers, which judge outcomes only: with the lazy clock, a closed breaker of
// this kind reads no clock on a success.
const UNTIMED = { slowCallDuration: (1n << 64n) - 1n };
const gBreakerUntimed = new g.CircuitBreaker(UNTIMED);
const gBulkhead = new g.Bulkhead({ maxConcurrent: 10 });
const gRetry = new g.Retry({ maxAttempts: 3 });
const gLimiter = new g.Limiter();
const opBreaker = new Opossum(noop, {});
const opCapacity = new Opossum(noop, { capacity: 10 });
const ckBreaker = cockatiel.circuitBreaker(cockatiel.handleAll, { halfOpenAfter: 10_000, breaker: new cockatiel.ConsecutiveBreaker(5) });
const ckRetry = cockatiel.retry(cockatiel.handleAll, { maxAttempts: 3, backoff: new cockatiel.ExponentialBackoff() });
const ckBulkhead = cockatiel.bulkhead(10, 0);

const groups = {
  floor: {
    'no guard (.then)': () => floor(noop),
  },
  breaker: {
    guards: () => gBreaker.execute(noop),
    'guards (untimed)': () => gBreakerUntimed.execute(noop),
    opossum: () => opBreaker.fire(),
    cockatiel: () => ckBreaker.execute(noop),
  },
  retry: {
    guards: () => gRetry.execute(noop),
    cockatiel: () => ckRetry.execute(noop),
  },
  bulkhead: {
    guards: () => gBulkhead.execute(noop),
    'opossum (capacity)': () => opCapacity.fire(),
    cockatiel: () => ckBulkhead.execute(noop),
  },
  // An adaptive limiter (no peer has one): two clock reads, the call's round trip.
  limiter: {
    guards: () => gLimiter.execute(noop),
  },
};

const fastBulkhead = new g.Bulkhead({ maxConcurrent: 10 })._fast();
const fastNone = new g.Bulkhead({ maxConcurrent: 10 })._fast();
const fastBreaker = new g.CircuitBreaker()._fast();
const fastUntimed = new g.CircuitBreaker(UNTIMED)._fast();
fastUntimed.report(fastUntimed.acquire(), 0); // the mirror shows the closed generation now
const parts = {
  'a permit taken and given back, bulkhead (2 native calls)': () => fastBulkhead.release(fastBulkhead.acquire()),
  'a permit taken and reported, breaker (2 native calls, 2 clock reads)': () => fastBreaker.report(fastBreaker.acquire(), 0),
  'the same, arguments through io (`execute` of a timed breaker)': () => { fastBreaker.io[0] = fastBreaker.acquire(); fastBreaker.io[1] = 0; fastBreaker.report(); },
  'the same, untimed breaker (2 native calls, no clock read)': () => fastUntimed.report(fastUntimed.acquire(), 0),
  'the same, through the mirror (1 native call: `execute` of an untimed breaker)': () => { fastUntimed.io[0] = fastUntimed.mirror[0] * 256; fastUntimed.reportIn(); },
  'a bulkhead permit held by count (2 native calls: `execute` of a bulkhead)': () => { fastBulkhead.acquireCounted(); fastBulkhead.releaseCounted(); },
  'one native call doing nothing (a made-up token handed back)': () => fastBulkhead.release(-1),
  'one native call doing nothing, no argument (a counted release, none held)': () => fastNone.releaseCounted(),
};

function timeSync(f) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) f();
  return Number(process.hrtime.bigint() - t0) / N;
}

async function time(f) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) await f();
  return Number(process.hrtime.bigint() - t0) / N;
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

(async () => {
  const over = {};
  for (const [grp, cs] of Object.entries(groups)) for (const c of Object.keys(cs)) over[`${grp}/${c}`] = [];
  const partTimes = Object.fromEntries(Object.keys(parts).map((k) => [k, []]));
  const bases = [];
  for (let r = -1; r < ROUNDS; r++) {          // round -1 warms up
    for (const [grp, cs] of Object.entries(groups)) {
      for (const [c, f] of Object.entries(cs)) {
        const base = await time(noop);
        const t = await time(f);
        if (r >= 0) { over[`${grp}/${c}`].push(t - base); bases.push(base); }
      }
    }
    for (const [k, f] of Object.entries(parts)) {
      const t = timeSync(f);
      if (r >= 0) partTimes[k].push(t);
    }
  }
  console.log(`node ${process.version}; ${ROUNDS} rounds x ${N} calls; bare await noop(): median ${median(bases).toFixed(0)} ns`);
  console.log('overhead per call over the bare await (median of rounds, [min..max]):');
  for (const [grp, cs] of Object.entries(groups)) {
    const gm = grp === 'floor' ? NaN : median(over[`${grp}/guards`]);
    for (const c of Object.keys(cs)) {
      const xs = over[`${grp}/${c}`];
      const m = median(xs);
      const ratio = c === 'guards' || grp === 'floor' ? '' : `  = ${(m / gm).toFixed(1)}x guards`;
      console.log(`  ${grp.padEnd(9)} ${c.padEnd(19)} ${m.toFixed(0).padStart(6)} ns  [${Math.min(...xs).toFixed(0)}..${Math.max(...xs).toFixed(0)}]${ratio}`);
    }
  }
  console.log('parts of guards\' cost, synchronous, per call (median of rounds, [min..max]):');
  for (const [k, xs] of Object.entries(partTimes)) {
    console.log(`  ${k.padEnd(80)} ${median(xs).toFixed(0).padStart(5)} ns  [${Math.min(...xs).toFixed(0)}..${Math.max(...xs).toFixed(0)}]`);
  }
})();
