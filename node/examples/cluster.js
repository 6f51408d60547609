'use strict';
// A node:http cluster of 4 workers sharing one circuit breaker and one bulkhead (in a
// region file) in front of a flaky backend. One worker's failures open the breaker for
// all four: the others refuse at once, without calling the backend, and so does every
// worker answering HTTP requests. After the open period the probes close it again.
// Last, a worker killed with SIGKILL while holding bulkhead slots: the primary reclaims
// them when it sees the worker exit.
//
//   node examples/cluster.js      (about 2 seconds; `make demo-node` runs it)

const cluster = require('node:cluster');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const g = require('..');

const WORKERS = 4;
const BREAKER = { windowSize: 20, minimumCalls: 10, failureRateThreshold: 0.5, openDuration: 800 };
const BULKHEAD = { maxConcurrent: 8 };

function get(port, urlPath) {
  return new Promise((resolve, reject) => {
    const req = http.get({ port, path: urlPath, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode, worker: Number(res.headers['x-worker']), body }));
    });
    req.on('error', reject);
  });
}

if (cluster.isWorker) {
  const { GUARDS_DEMO_REGION: file, GUARDS_DEMO_BACKEND: backendPort } = process.env;
  const region = new g.Region(file);
  const breaker = region.circuitBreaker('backend', BREAKER);
  const bulkhead = region.bulkhead('backend-pool', BULKHEAD);
  const id = cluster.worker.id;

  // One call to the backend through the host-wide guards: 'ok', 'failed' or the refusal.
  async function call() {
    try {
      await bulkhead.execute(() => breaker.execute(async () => {
        const r = await get(backendPort, '/');
        if (r.status !== 200) throw Object.assign(new Error(`backend ${r.status}`), { status: r.status });
      }));
      return 'ok';
    } catch (e) {
      return e instanceof g.RejectedError ? e.code : 'failed';
    }
  }

  http.createServer(async (req, res) => {
    const r = await call();
    const status = r === 'ok' ? 200 : r === 'failed' ? 502 : 503;
    res.writeHead(status, { 'x-worker': String(id) });
    res.end(r);
  }).listen(Number(process.env.GUARDS_DEMO_PORT), () => process.send({ listening: true }));

  const held = [];
  process.on('message', async (m) => {
    if (m.hold) {
      held.push(bulkhead.tryAcquire(), bulkhead.tryAcquire());
      process.send({ id, pid: process.pid, holding: held.length });
      return;
    }
    const seen = { ok: 0, failed: 0, refused: 0 };
    for (let i = 0; i < m.calls; i++) {
      const r = await call();
      if (r === 'ok') seen.ok++; else if (r === 'failed') seen.failed++; else seen.refused++;
    }
    process.send({ id, pid: process.pid, ...seen, state: breaker.state() });
  });
} else {
  main().catch((e) => { console.error(e); process.exit(1); });
}

async function main() {
  const file = path.join(os.tmpdir(), `guards-cluster-demo-${process.pid}`);
  const region = new g.Region(file);
  const breaker = region.circuitBreaker('backend', BREAKER);
  const pool = region.bulkhead('backend-pool', BULKHEAD);
  breaker.on('stateChange', (e) => console.log(`  (primary heard: breaker ${e.from} -> ${e.to})`));

  // the flaky backend
  let down = false;
  let hits = 0;
  const backend = http.createServer((req, res) => {
    hits++;
    res.writeHead(down ? 500 : 200);
    res.end(down ? 'down' : 'fine');
  });
  await new Promise((r) => backend.listen(0, r));

  // the cluster's front port
  const probe = http.createServer();
  await new Promise((r) => probe.listen(0, r));
  const port = probe.address().port;
  await new Promise((r) => probe.close(r));

  cluster.setupPrimary({ exec: __filename });
  const workers = [];
  for (let i = 0; i < WORKERS; i++) {
    workers.push(cluster.fork({
      GUARDS_DEMO_REGION: file,
      GUARDS_DEMO_BACKEND: String(backend.address().port),
      GUARDS_DEMO_PORT: String(port),
    }));
  }
  await Promise.all(workers.map((w) => new Promise((r) => w.once('message', r))));
  const ask = (w, calls) => new Promise((r) => { w.once('message', r); w.send({ calls }); });

  async function traffic(label, n) {
    const before = hits;
    const by = new Map();
    for (let i = 0; i < n; i++) {
      const r = await get(port, '/');
      const row = by.get(r.worker) || { 200: 0, 502: 0, 503: 0 };
      row[r.status]++;
      by.set(r.worker, row);
    }
    console.log(`\n${label}: ${n} HTTP requests to the cluster (backend hit ${hits - before} times)`);
    console.log('  worker | 200 ok | 502 backend failed | 503 refused by the shared guards');
    for (const [w, row] of [...by].sort((a, b) => a[0] - b[0])) {
      console.log(`  ${String(w).padStart(6)} | ${String(row[200]).padStart(6)} | ${String(row[502]).padStart(18)} | ${String(row[503]).padStart(6)}`);
    }
  }

  await traffic('1. backend healthy', 40);

  down = true;
  console.log('\n2. the backend goes down; only worker 1 calls it (30 calls)');
  const w1 = await ask(workers[0], 30);
  console.log(`  worker 1 (pid ${w1.pid}): ${w1.failed} failed, then ${w1.refused} refused: breaker ${w1.state}`);

  console.log('\n3. the other workers, which have not seen a single failure, call once each');
  console.log('  worker | pid     | backend called | answer      | breaker');
  for (const w of workers.slice(1)) {
    const before = hits;
    const r = await ask(w, 1);
    const answer = r.refused ? 'refused' : r.failed ? 'failed' : 'ok';
    console.log(`  ${String(r.id).padStart(6)} | ${String(r.pid).padEnd(7)} | ${String(hits > before).padEnd(14)} | ${answer.padEnd(11)} | ${r.state}`);
  }

  await traffic('4. backend still down, breaker open for the host', 40);

  down = false;
  console.log(`\n5. the backend recovers; after the open period (${BREAKER.openDuration} ms) probes close the breaker`);
  while (breaker.state() !== 'half_open') await new Promise((r) => setTimeout(r, 50));
  await traffic('   traffic again', 40);
  console.log('\n6. worker 4 takes 2 bulkhead slots and is killed with SIGKILL before giving them back');
  const w4 = workers[3];
  const h = await new Promise((r) => { w4.once('message', r); w4.send({ hold: true }); });
  console.log(`  in flight host-wide: ${pool.inFlight} of ${pool.maxConcurrent} (worker 4, pid ${h.pid}, holds ${h.holding})`);
  const reclaimed = await new Promise((r) => {
    w4.once('exit', () => r(region.reclaim())); // the primary reclaims when a worker dies
    process.kill(h.pid, 'SIGKILL');
  });
  console.log(`  on its exit the primary calls region.reclaim(): ${reclaimed.permits} permits back; in flight: ${pool.inFlight}`);

  const s = breaker.stats();
  console.log(`\nhost-wide breaker: ${s.failures} failures, ${s.rejectedOpen} refused while open, `
    + `${s.closedToOpen} opening, ${s.halfOpenToClosed} closing, state ${s.state}`);
  console.log(`region: ${JSON.stringify(region.stats())}`);

  for (const w of workers) w.kill();
  await new Promise((r) => backend.close(r));
  g.Region.remove(file);
}
