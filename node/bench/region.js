'use strict';
// A guard in a region (host-wide, permits recorded with their owner process) beside the
// same guard private to this process, in one run: rounds interleaved (each round times
// every variant once, in turn), medians of the rounds, ratio region / private.
//
// Measured, per call:
// - `execute` of a no-op promise (what an application does);
// - `execute` of a synchronous no-op (the guard's part of it, with the layer's promise);
// - the fast path alone: a permit taken and given back (two native calls).
//
//   node bench/region.js [rounds] [callsPerRound]

const os = require('node:os');
const path = require('node:path');
const g = require('..');

const ROUNDS = Number(process.argv[2] || 9);
const N = Number(process.argv[3] || 100_000);
const noop = async () => 1;
const syncNoop = () => 1;

const file = path.join(os.tmpdir(), `guards-bench-region-${process.pid}`);
const region = new g.Region(file);

const pBulkhead = new g.Bulkhead({ maxConcurrent: 10 });
const rBulkhead = region.bulkhead('bulkhead', { maxConcurrent: 10 });
const pBreaker = new g.CircuitBreaker();
const rBreaker = region.circuitBreaker('breaker');
const pFastB = pBulkhead._fast();
const rFastB = rBulkhead._fast();
const pFastC = pBreaker._fast();
const rFastC = rBreaker._fast();
// a region budget is a RetryBudget over the region's memory: the same code, other memory
// (ratio 1: every deposit pays for the next withdrawal, the bucket never empties)
const pBudget = new g.RetryBudget({ capacity: 100, ratio: 1 });
const rBudget = region.retryBudget('budget', { capacity: 100, ratio: 1 });
const pRetry = new g.Retry({ budget: pBudget });
const rRetry = new g.Retry({ budget: rBudget });

const groups = {
  'bulkhead execute(async no-op)': { private: () => pBulkhead.execute(noop), region: () => rBulkhead.execute(noop) },
  'breaker execute(async no-op)': { private: () => pBreaker.execute(noop), region: () => rBreaker.execute(noop) },
  'bulkhead execute(sync no-op)': { private: () => pBulkhead.execute(syncNoop), region: () => rBulkhead.execute(syncNoop) },
  'breaker execute(sync no-op)': { private: () => pBreaker.execute(syncNoop), region: () => rBreaker.execute(syncNoop) },
  'retry(async no-op) with a budget': { private: () => pRetry.execute(noop), region: () => rRetry.execute(noop) },
};
const sync = {
  'bulkhead acquire + release (fast path)': { private: () => pFastB.release(pFastB.acquire()), region: () => rFastB.release(rFastB.acquire()) },
  'breaker acquire + report (fast path)': { private: () => pFastC.report(pFastC.acquire(), 0), region: () => rFastC.report(rFastC.acquire(), 0) },
  'retry budget deposit + withdraw': { private: () => { pBudget.deposit(); pBudget.withdraw(); }, region: () => { rBudget.deposit(); rBudget.withdraw(); } },
};

async function time(f) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) await f();
  return Number(process.hrtime.bigint() - t0) / N;
}

function timeSync(f) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) f();
  return Number(process.hrtime.bigint() - t0) / N;
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

(async () => {
  const samples = {};
  const add = (name, v, ns) => { ((samples[name] ||= { private: [], region: [] })[v]).push(ns); };
  for (let r = 0; r <= ROUNDS; r++) {
    for (const [name, vs] of Object.entries(groups)) {
      for (const v of r % 2 ? ['region', 'private'] : ['private', 'region']) {
        const ns = await time(vs[v]);
        if (r > 0) add(name, v, ns); // round 0 warms up
      }
    }
    for (const [name, vs] of Object.entries(sync)) {
      for (const v of r % 2 ? ['region', 'private'] : ['private', 'region']) {
        const ns = timeSync(vs[v]);
        if (r > 0) add(name, v, ns);
      }
    }
  }
  console.log(`guards ${g.version}, node ${process.version}, ${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(2)}; `
    + `${ROUNDS} rounds of ${N} calls, medians`);
  console.log('| one call | private guard | region guard | region / private |');
  console.log('|---|---|---|---|');
  for (const [name, s] of Object.entries(samples)) {
    const p = median(s.private), q = median(s.region);
    console.log(`| ${name} | ${p.toFixed(1)} ns | ${q.toFixed(1)} ns | ${(q / p).toFixed(2)} |`);
  }
  const st = region.stats();
  if (st.permitsHeld !== 0) throw new Error(`permits left held: ${st.permitsHeld}`);
  g.Region.remove(file);
})().catch((e) => { console.error(e); process.exit(1); });
