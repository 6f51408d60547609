'use strict';
// The live testbed's caller tier in Node (docs/live.md): the same service as shop_api.py,
// on node:http with the package's httpAdmission middleware and createFetch.
//
// Each request (/product, /cart, /checkout) enters through httpAdmission, waits for one of
// the topology's `servers` threads (a FIFO pool held for the whole request), is dropped
// at dequeue when the caller's grpc-timeout has passed, works for the op's time, then calls
// stock through createFetch configured from the edge's policy: the retry policy, the shared
// RetryBudget, a KeyedBreakers per operation, the deadline sent (grpc-timeout), and the
// Bulkhead (one slot per attempt, inside the breaker: the `fetch` createFetch calls). The
// answers, headers, /stats, /series, /snapshot and /admin/quit are those of shop_api.py.
// With `region` in the config (run.py --caller-procs N, N > 1) the bulkhead and the retry
// budget are the region's (node/lib/region.js: one cap and one budget for the N caller
// processes); the breakers stay per process, as in shop_api.py.

const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const crypto = require('node:crypto');

const pkg = process.env.LIVE_NODE_PKG || path.join(__dirname, '..', '..', 'node');
const g = require(pkg);

const NS = 1_000_000_000n;
const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : dflt; };
const cfg = JSON.parse(fs.readFileSync(opt('--config'), 'utf8'));
const maxRunS = Number(opt('--max-run-s', '600'));
const t0 = BigInt(cfg.t0_ns);

// Topology settings are snake_case with durations in seconds; Node options are camelCase
// with durations in ms.
const DURATIONS = new Set(['window_duration', 'slow_call_duration', 'open_duration', 'max_open_duration',
  'probe_timeout', 'max_retry_after', 'min_attempt_time', 'base', 'cap']);
const camel = (k) => k.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
function nodeOptions(o) {
  const out = {};
  for (const [k, v] of Object.entries(o)) {
    if (v === null || v === undefined) continue;
    if (v && typeof v === 'object') out[camel(k)] = nodeOptions(v);
    else out[camel(k)] = DURATIONS.has(k) ? v * 1000 : v;
  }
  return out;
}

const series = new Map();
function add(name, n = 1) {
  const sec = String((process.hrtime.bigint() - t0) / NS);
  let c = series.get(sec);
  if (!c) series.set(sec, (c = {}));
  c[name] = (c[name] || 0) + n;
}

// The thread pool: FIFO waiters.
let free = cfg.servers; let busy = 0; const waiters = [];
const acquire = () => (free > 0 ? (free--, Promise.resolve()) : new Promise((r) => waiters.push(r)));
const release = () => { const w = waiters.shift(); if (w) w(); else free++; };

const region = cfg.region ? new g.Region(cfg.region) : null;
let budget = null;
if (cfg.budget) budget = region ? region.retryBudget(cfg.region_budget, nodeOptions(cfg.budget)) : new g.RetryBudget(nodeOptions(cfg.budget));
let bulkhead = null;
if (cfg.bulkhead) bulkhead = region ? region.bulkhead(cfg.region_bulkhead, nodeOptions(cfg.bulkhead)) : new g.Bulkhead(nodeOptions(cfg.bulkhead));
let held = 0; // slots this process holds (a region bulkhead's inFlight counts every process's)
const stockHost = `http://127.0.0.1:${cfg.stock_port}`;
// A keep-alive pool (stock serves keep-alive), or a new connection per attempt.
const agent = new http.Agent({ keepAlive: cfg.keep_alive !== false, maxSockets: Infinity });

/** One attempt: the bulkhead slot, counted, over node:http. */
function gateFetch(op, useBulkhead) {
  return (url, init) => {
    let permit = null;
    if (useBulkhead && bulkhead) {
      try { permit = bulkhead.tryAcquire(); } catch (e) { add(`${op}.bulkhead_rejections`); throw e; }
      held++;
    }
    if (init.live) { init.live.n++; if (init.live.n > 1) add(`${op}.retries`); }
    add(`${op}.calls`);
    const done = () => { if (permit) { permit.release(); permit = null; held--; } };
    return new Promise((resolve, reject) => {
      const headers = {};
      init.headers.forEach((v, k) => { headers[k] = v; });
      const req = http.request(url, { method: init.method, headers, agent }, (res) => {
        res.resume();
        res.on('end', () => {
          done();
          add(`${op}.status_${res.statusCode}`);
          resolve(new Response(null, { status: res.statusCode, headers: Object.entries(res.headers).filter(([, v]) => typeof v === 'string') }));
        });
        res.on('error', (e) => { done(); reject(e); });
      });
      const onAbort = () => { add(`${op}.timeouts`); req.destroy(); done(); reject(new DOMException('aborted', 'AbortError')); };
      if (init.signal) {
        if (init.signal.aborted) return onAbort();
        init.signal.addEventListener('abort', onAbort, { once: true });
      }
      req.on('error', (e) => { done(); if (!(init.signal && init.signal.aborted)) { add(`${op}.errors`); reject(e); } });
      req.end();
    });
  };
}

const ops = {};
for (const [name, op] of Object.entries(cfg.ops)) {
  ops[name] = { work: op.work, call: op.call };
  if (!op.call) continue;
  const pol = op.call.policy;
  const retry = nodeOptions(pol.retry);
  ops[name].fetch = g.createFetch({
    ...retry,
    attemptTimeoutMs: pol.attempt_timeout * 1000,
    budget: pol.budget !== null && budget ? budget : null,
    breakers: pol.breaker ? new g.KeyedBreakers({ slots: 1, ...nodeOptions(pol.breaker) }) : null,
    deadlineHeader: pol.deadline !== 'none' ? 'grpc' : null,
    fetch: gateFetch(op.call.op, pol.bulkhead !== null),
  });
}

// Retries the budget refused, per op, read after each failed call from the retry plans'
// give-up counts (a call that succeeded refused none): a refused retry after a response
// (stock's 504) returns that response rather than throwing BudgetExhaustedError
// (createFetch's rule), and the model counts every refused ask.
const refusedSeen = {};
function countBudgetRefusals(name, op) {
  const st = ops[name].fetch.stats();
  const n = st.idempotent.policy.budgetExhausted + st.keyed.policy.budgetExhausted + st.unkeyed.policy.budgetExhausted;
  const d = n - (refusedSeen[name] || 0);
  if (d > 0) { refusedSeen[name] = n; add(`${op}.budget_refusals`, d); }
}

async function callStock(name, timeLeftMs, signal) {
  const call = ops[name].call;
  const op = call.op;
  add(`${op}.first`);
  const headers = { 'x-priority': String(call.priority ?? 1) };
  let method = 'GET';
  if (call.policy.idempotency === 'keyed_side_effect') { method = 'POST'; headers['idempotency-key'] = crypto.randomUUID(); }
  const init = { method, headers, live: { n: 0 }, signal };
  if (timeLeftMs !== null) init.timeoutMs = Math.max(1, timeLeftMs);
  let res;
  try {
    res = await ops[name].fetch(`${stockHost}/${op}`, init);
  } catch (e) {
    countBudgetRefusals(name, op);
    if (e instanceof g.BreakerOpenError) { add(`${op}.breaker_rejections`); return [false, 'breaker']; }
    if (e instanceof g.BulkheadFullError) return [false, 'bulkhead'];
    if (e instanceof g.BudgetExhaustedError) return [false, 'budget'];
    if (e instanceof g.RetriesExhaustedError || e instanceof g.DeadlineExceededError || e instanceof g.AttemptTimeoutError) return [false, 'timeout'];
    return [false, 'error'];
  }
  if (res.status === 200) { add(`${op}.ok`); return [true, '']; }
  countBudgetRefusals(name, op);
  if (res.status === 504) return [false, 'timeout'];
  return [false, res.headers.get('x-refused-by') || `status-${res.status}`];
}

async function handle(name, deadlineNs, cancelled, signal) {
  const op = ops[name];
  await acquire();
  busy++;
  try {
    if (cancelled.value) return null;
    const leftMs = deadlineNs === null ? null : Number(deadlineNs - process.hrtime.bigint()) / 1e6;
    if (cfg.deadline_check && leftMs !== null && leftMs <= 0) { add('dropped_deadline'); return [504, { 'x-refused-by': 'shop-api-deadline' }]; }
    if (op.work > 0) await new Promise((r) => setTimeout(r, op.work * 1000));
    if (!op.call) { add(`${name}.full`); return [200, { 'x-outcome': 'full' }]; }
    const left = deadlineNs === null ? null : Number(deadlineNs - process.hrtime.bigint()) / 1e6;
    const [ok, why] = await callStock(name, left, signal);
    if (ok) { add(`${name}.full`); return [200, { 'x-outcome': 'full' }]; }
    if (op.call.optional) { add(`${name}.degraded`); return [200, { 'x-outcome': 'degraded', 'x-refused-by': why }]; }
    add(`${name}.failed`);
    if (op.call.policy.give_up_as_overloaded) return [503, { 'retry-after': '1', 'x-refused-by': why }];
    return [502, { 'x-refused-by': why }];
  } finally {
    busy--;
    release();
  }
}

let server;
function gauges() {
  const out = { busy, queued: waiters.length };
  if (bulkhead) out.bulkhead_in_flight = region ? held : bulkhead.inFlight;
  if (budget) out.budget = budget.stats();
  if (region) {
    out.pid = process.pid;
    if (bulkhead) out.region_bulkhead_in_flight = bulkhead.inFlight;
    const st = region.stats();
    out.region = { permits_held: st.permitsHeld, reclaimed_permits: st.reclaimedPermits, reclaimed_claims: st.reclaimedClaims, scans: st.scans };
  }
  return out;
}
function quit() {
  server.close();
  agent.destroy();
  const gg = gauges();
  process.stderr.write(`live-shop-api (node): stopped; ${JSON.stringify(gg)}\n`);
  const clean = gg.busy === 0 && gg.queued === 0 && (gg.bulkhead_in_flight || 0) === 0;
  setTimeout(() => process.exit(clean ? 0 : 3), 50);
}

async function app(req, res) {
  const name = req.url.split('?')[0].slice(1);
  if (ops[name]) {
    add(`${name}.arrivals`);
    let deadlineNs = null;
    const gt = req.headers['grpc-timeout'];
    if (typeof gt === 'string') {
      try { deadlineNs = process.hrtime.bigint() + BigInt(Math.floor(g.parseGrpcTimeout(gt) * 1e6)); } catch { deadlineNs = null; }
    }
    const cancelled = { value: false };
    // As shipped the request runs on when its app leaves; with cancel it stops (the
    // threads it waits for, the call to stock: its attempt is aborted) as soon as the
    // connection closes.
    const leave = cfg.cancel_on_disconnect ? new AbortController() : null;
    const work = handle(name, deadlineNs, cancelled, leave ? leave.signal : undefined);
    if (leave) {
      res.on('close', () => {
        if (!res.writableEnded) { cancelled.value = true; add(`${name}.cancelled`); leave.abort(); }
      });
    }
    const r = await work;
    if (r === null || res.destroyed) return;
    res.writeHead(r[0], { ...r[1], 'content-length': '0' });
    res.end();
    return;
  }
  let body = '';
  if (req.url === '/stats') body = JSON.stringify(gauges());
  else if (req.url === '/series') body = JSON.stringify(Object.fromEntries(series));
  else if (req.url === '/snapshot') body = JSON.stringify({ gauges: gauges(), series: Object.fromEntries(series) });
  else if (req.url === '/admin/quit') { res.end('bye\n'); quit(); return; } else { res.statusCode = 404; body = 'no such path\n'; }
  res.end(body);
}

const door = new g.Admission(cfg.admission ? nodeOptions(cfg.admission) : { limits: Array(8).fill(1_000_000) });
server = http.createServer({ keepAliveTimeout: 60_000 }, g.httpAdmission(door, app, { priority: 'x-priority' }));
server.listen(Number(cfg.port || 0), '127.0.0.1', 4096, () => {
  process.stdout.write(`listening on 127.0.0.1:${server.address().port}\n`);
});
setTimeout(() => { process.stderr.write('live-shop-api (node): --max-run-s reached, stopping\n'); quit(); }, maxRunS * 1000).unref();
