'use strict';
// The prom-client collector: a real registry scraped in the text format, parsed, and every
// sample checked against the guard's stats() read at scrape time.
const test = require('node:test');
const assert = require('node:assert/strict');
const client = require('prom-client');
const g = require('..');

/** The samples of a text-format scrape: `{ name, labels, value }`, and the TYPE of each family. */
function parse(text) {
  const samples = [];
  const types = new Map();
  const helps = new Map();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let m;
    if ((m = /^# TYPE (\S+) (\S+)$/.exec(line))) { types.set(m[1], m[2]); continue; }
    if ((m = /^# HELP (\S+) (.*)$/.exec(line))) { helps.set(m[1], m[2]); continue; }
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `a sample line: ${line}`);
    const labels = {};
    for (const l of (m[2] ? m[2].match(/\w+="(?:[^"\\]|\\.)*"/g) : []) || []) {
      const i = l.indexOf('=');
      labels[l.slice(0, i)] = JSON.parse(l.slice(i + 1));
    }
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return { samples, types, helps };
}

test('a registry scrape shows every numeric stat of every guard, read at scrape time', async () => {
  const registry = new client.Registry();
  const stock = new g.CircuitBreaker({ windowSize: 4, minimumCalls: 4, openDuration: 60_000 });
  const pool = new g.Bulkhead({ maxConcurrent: 3 });
  const budget = new g.RetryBudget({ capacity: 5, ratio: 0.1 });
  const { metrics } = g.prometheusCollector({ stock, pool, budget }, { registry });
  assert.ok(metrics.includes('guards_successes_total'));
  assert.ok(metrics.includes('guards_in_flight'));
  assert.ok(metrics.includes('guards_breaker_state'));

  for (let i = 0; i < 3; i++) await stock.execute(async () => 1);
  for (let i = 0; i < 4; i++) await stock.execute(async () => { throw Object.assign(new Error('x'), { code: 'ECONNRESET' }); }).catch(() => {});
  const held = pool.tryAcquire();
  budget.withdraw();

  const { samples, types, helps } = parse(await registry.metrics());
  const one = (name, guard, extra = {}) => {
    const found = samples.filter((s) => s.name === name && s.labels.guard === guard && Object.entries(extra).every(([k, v]) => s.labels[k] === v));
    assert.equal(found.length, 1, `${name}{guard="${guard}"} once`);
    return found[0];
  };
  // counters are `_total` counters, levels are gauges; every family has a HELP line
  assert.equal(types.get('guards_successes_total'), 'counter');
  assert.equal(types.get('guards_in_flight'), 'gauge');
  assert.equal(types.get('guards_breaker_state'), 'gauge');
  for (const name of types.keys()) assert.ok(helps.has(name), `HELP of ${name}`);

  const bs = stock.stats();
  assert.equal(one('guards_successes_total', 'stock').value, bs.successes);
  assert.equal(one('guards_failures_total', 'stock').value, bs.failures);
  assert.equal(one('guards_closed_to_open_total', 'stock').value, 1);
  assert.equal(one('guards_successes_total', 'stock').labels.kind, 'circuit_breaker');
  assert.equal(one('guards_breaker_state', 'stock', { state: 'open' }).value, 1);
  assert.equal(one('guards_breaker_state', 'stock', { state: 'closed' }).value, 0);
  assert.equal(one('guards_in_flight', 'pool').value, 1);
  assert.equal(one('guards_acquired_total', 'pool').value, 1);
  assert.equal(one('guards_withdrawals_total', 'budget').value, 1);
  assert.equal(one('guards_tokens', 'budget').value, budget.stats().tokens);

  // read at scrape time: the next scrape sees the slot given back
  held.release();
  const after = parse(await registry.metrics()).samples;
  assert.equal(after.find((s) => s.name === 'guards_in_flight' && s.labels.guard === 'pool').value, 0);
  assert.equal(after.find((s) => s.name === 'guards_released_total' && s.labels.guard === 'pool').value, 1);
});

test('collector options are checked', () => {
  assert.throws(() => g.prometheusCollector(null), (e) => e instanceof TypeError && e.option === 'guards');
  assert.throws(() => g.prometheusCollector({ x: {} }), (e) => e instanceof TypeError && e.option === 'guards.x');
});
