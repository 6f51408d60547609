// A program against the package's types (lib/index.d.ts): test/typescript.test.js checks
// that it compiles with tsc, that each `@ts-expect-error` below is an error, and that
// misspelt.ts is refused naming the misspelt option.
import * as http from 'node:http';
import * as g from '../..';

async function main(): Promise<void> {
  const stock = new g.CircuitBreaker({ windowSize: 20, openDuration: 5000, failureRateThreshold: 0.5 });
  const pool = new g.Bulkhead({ maxConcurrent: 12 });
  const budget = new g.RetryBudget({ capacity: 10, ratio: 0.1 });
  const aws = new g.RetryBudget({ mode: 'aws', capacity: 500 });

  const n: number = await stock.execute(async () => 42);
  const s: string = await pool.execute(() => 'sync value');
  stock.on('stateChange', (e) => {
    const to: g.BreakerState = e.to;
    console.log(e.from, to, e.breaker.stats().closedToOpen);
  });
  const state: 'closed' | 'open' | 'half_open' = stock.state();
  const permit = stock.tryAcquire(g.nowNs());
  permit.report('success');
  // @ts-expect-error not an outcome
  permit.report('fine');

  const region = g.Region.open('myapp-guards', { maxGuards: 8, pollInterval: 50 });
  const hostStock = region.circuitBreaker('stock', { windowSize: 20 });
  const hostPool = region.bulkhead('pool', { maxConcurrent: 12 });
  const viaRegion: number = await hostPool.execute(() => hostStock.execute(async () => 1));
  hostStock.on('stateChange', (e) => console.log(e.from, e.to, e.breaker.name));
  const held: number = region.stats().permitsHeld + region.reclaim().permits + hostPool.permitsHeld;
  // @ts-expect-error not a region option
  g.Region.open('x', { maxGuard: 1 });
  console.log(viaRegion, held, region.retryBudget('r').gate()(g.nowNs(), 'timeout'));
  // a region's budget is a RetryBudget: retry() and createFetch take it
  const hostBudget: g.RetryBudget = region.retryBudget('r');
  const viaBudget: number = await g.retry(async () => 2, { budget: hostBudget, maxAttempts: 2 });
  const hostFetch = g.createFetch({ budget: region.retryBudget('r') });
  const tracker: g.LatencyTracker = region.latencyTracker('lat');
  const hedge: g.Hedging = region.hedging('hedge', { delayQuantile: 0.95 });
  const throttle: g.AdaptiveThrottle = region.adaptiveThrottle('thr');
  const brown: g.Brownout = region.brownout('op', { optional: true });
  console.log(viaBudget, typeof hostFetch, tracker.count(), hedge.stats().hedges, throttle.stats(), brown.stats(), region.hedging('h').name);
  const receipt = aws.withdraw('transient');
  if (receipt !== null) aws.report('success', undefined, receipt);

  const limiter = new g.Limiter({ limit: { algorithm: 'vegas', initialLimit: 20 }, partitions: [{ share: 0.8 }] });
  limiter.on('limitChange', (e) => console.log(e.from, e.to));
  await limiter.execute(async () => 1, { priority: 2 });

  const v: { ok: boolean } = await g.retry(async ({ signal, attempt, budgetMs }) => {
    void signal; void budgetMs;
    return { ok: attempt > 0 };
  }, { maxAttempts: 3, budget, attemptTimeoutMs: 250, timeoutMs: 2000, backoff: { base: 25, cap: 1000, jitter: 'full' } });

  // @ts-expect-error a misspelt retry option
  await g.retry(async () => 1, { maxAttemps: 3 });

  const plan = new g.Retry({ maxAttempts: 2, classify: (err) => (err instanceof Error ? 'timeout' : undefined) });
  plan.on('retry', (e) => console.log(e.attempt, e.delayMs, e.outcome));
  plan.on('giveUp', (e) => console.log(e.reason, e.attempts));
  const ac = new AbortController();
  const text: string = await plan.execute(async () => 'x', { signal: ac.signal });

  const badges = g.guarded([stock, pool], {
    retry: { maxAttempts: 2, budget },
    timeoutMs: 100,
    fallback: (err: unknown) => ({ badges: [] as string[], degraded: err instanceof g.GuardsError ? err.code : 'failed' }),
  });
  const b = await badges.execute(async () => ({ badges: ['gold'], degraded: 'no' }));
  console.log(b.badges.length, b.degraded);
  badges.on('fallback', (e) => console.log(e.served, e.kind));

  const fetch2 = g.createFetch({ maxAttempts: 3, attemptTimeoutMs: 500, deadlineHeader: 'millis' });
  const res: Response = await fetch2('http://127.0.0.1:1/', { method: 'GET', timeoutMs: 1000, signal: ac.signal });
  console.log(res.status, fetch2.stats().idempotent.retries, fetch2.breakers?.stats().open);
  // @ts-expect-error a misspelt createFetch option
  g.createFetch({ deadlineHeadr: 'grpc' });

  const door = new g.Admission({ limits: [80, 64, 64, 64, 64, 64, 64, 64] });
  const handler = g.httpAdmission(door, (req, res2) => { res2.end(req.url); }, { priority: 'x-priority' });
  http.createServer(handler);
  console.log(handler.stats().rejected, g.expressAdmission(door).stats().admitted);

  try {
    await stock.execute(async () => 1);
  } catch (e) {
    if (e instanceof g.BreakerOpenError) {
      const at: bigint | undefined = e.retryAt;
      console.log(e.code, at, e.retryAfterMs);
    } else if (e instanceof g.BulkheadFullError) {
      console.log(e.inFlight, e.maxConcurrent);
    }
  }

  const shared = g.Bulkhead.shared({ maxConcurrent: 4 });
  const mem: SharedArrayBuffer | undefined = shared.sharedMemory;
  if (mem) g.Bulkhead.fromShared(mem);
  const st: g.BulkheadStats = pool.stats();
  const d = g.Deadline.after(250);
  const left: number = d.timeLeftMs();
  const verdicts = g.outcomeVerdicts('timeout');
  console.log(n, s, state, v.ok, text, st.inFlight, left, verdicts.breakerCall, g.OUTCOMES[0], g.version);
  console.log(g.classifyError(new Error('x')).outcome, g.classifyHttp(503, '5').retryAfterMs);
  g.prometheusCollector({ stock, pool, door });

  // a fleet-wide allowance: this member's share of 48 through Redis
  const fleet: g.Fleet = await g.Fleet.join({ url: 'redis://127.0.0.1:6379', service: 'shop-api', member: 'host-1', syncIntervalMs: 250 });
  fleet.attach('stock', 48, pool);
  fleet.attach('calls', 100, new g.Limiter({ limit: 20 }));
  fleet.attach('retries', 50, budget);
  const fs: g.FleetStats = fleet.stats();
  const share: number = fleet.share('stock') + fs.allowances[0].claimsWon;
  for (const e of fleet.events()) {
    if (e.kind === 'shareChanged') console.log(e.allowance, e.from, e.to);
    else if (e.kind === 'redisLost') console.log(e.error);
  }
  // @ts-expect-error not a fleet option
  await g.Fleet.join({ url: 'redis://x', service: 's', member: 'm', syncInterval: 250 });
  // @ts-expect-error not a guard a fleet resizes
  fleet.attach('breaker', 1, stock);
  await fleet.leave();
  const ceiling: number | null = new g.Limiter().maxLimit;
  const was: number = pool.setMaxConcurrent(8);
  const capacity: number | null = budget.capacity;
  console.log(share, ceiling, was, capacity, budget.setCapacity(5), new g.Limiter().setMaxLimit(3));
  try { await g.Fleet.join({ url: 'redis://x', service: 's', member: 'm' }); } catch (e) {
    if (e instanceof g.FleetError && e.code === 'GUARDS_FLEET_AUTH') console.log(e.message);
  }
}

void main;
