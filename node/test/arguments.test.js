'use strict';
// Every positional argument of every native class and function is read by name: a value of
// the wrong JavaScript type is a TypeError naming the argument (`option`, and `code`
// 'GUARDS_INVALID_OPTION'), never napi's own `Error` (`BigintExpected`, ...). The calls
// are generated from index.d.ts: for each method and each parameter, the parameters before
// it get a valid value and it gets a symbol (no parameter takes one but a vector result).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const g = require('..');
const native = require('../lib/native');

const dts = fs.readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8');
const os = require('node:os');
const regionFile = path.join(os.tmpdir(), `guards-arguments-${process.pid}`);
const region = new g.Region(regionFile);
test.after(() => g.Region.remove(regionFile));

/** A valid value of TypeScript type `t` (the first alternative that is not null). */
function valid(t, name) {
  const alt = t.split('|').map((s) => s.trim()).filter((s) => s !== 'null' && s !== 'undefined')[0] || '';
  if (/^'/.test(alt)) return alt.slice(1, alt.indexOf("'", 1));
  switch (alt) {
    case 'bigint': return 1n;
    case 'number': return { q: 0.5, margin: 0 }[name] ?? 1;
    case 'boolean': return true;
    case 'string': return { name: 'circuit_breaker', id: 'job', path: path.join(__dirname, '..', '..', 'tests', 'vectors'), fileName: 'bulkhead.json', text: '{}', field: 'x', kind: 'zero', message: 'm', reason: 'r' }[name] ?? 'x';
    case 'Outcome': return 'success';
    case 'RefusalKind': return 'timeout';
    case 'Uint8Array': return new Uint8Array(1);
    case 'RetryPolicy': return new g.RetryPolicy();
    case 'RetryBudget': return new g.RetryBudget();
    case 'Deadline': return g.Deadline.none();
    case 'RetryReceipt': return undefined;
    case 'Region': return region;
    default: return undefined;
  }
}

/** `[name, optional, type]` of each parameter in a TypeScript parameter list. */
function params(list) {
  const out = [];
  let depth = 0, cur = '';
  for (const ch of list) {
    if ('({[<'.includes(ch)) depth++;
    if (')}]>'.includes(ch)) depth--;
    if (ch === ',' && depth === 0) { out.push(cur); cur = ''; } else cur += ch;
  }
  if (cur.trim()) out.push(cur);
  return out.map((p) => {
    const m = /^\s*(\w+)(\??):\s*([\s\S]+)$/.exec(p);
    return [m[1], m[2] === '?', m[3].trim()];
  });
}

/** Every callable of the addon: `{ what, call(args) }`. */
function callables() {
  const out = [];
  const instances = {
    CircuitBreaker: () => new g.CircuitBreaker(), KeyedBreakers: () => new g.KeyedBreakers(),
    Bulkhead: () => new g.Bulkhead(), Limiter: () => new g.Limiter(), Admission: () => new g.Admission(),
    RetryBudget: () => new g.RetryBudget(), RetryPolicy: () => new g.RetryPolicy(),
    RetryDriver: () => new g.RetryDriver(new g.RetryPolicy()), Backoff: () => new g.Backoff(),
    Deadline: () => g.Deadline.after(1000), Hedging: () => new g.Hedging(), LatencyTracker: () => new g.LatencyTracker(),
    AdaptiveThrottle: () => new g.AdaptiveThrottle(), QueueDiscipline: () => new g.QueueDiscipline(),
    Brownout: () => new g.Brownout(), BrownoutTable: () => new g.BrownoutTable(), Limit: () => new g.Limit(4), RetryDrivers: () => new native.RetryDrivers(new g.RetryPolicy()),
    VectorSession: () => native.VectorSession.fromText('bulkhead.json', '{"guard":"bulkhead","cases":[]}'),
    CircuitBreakerPermit: () => new g.CircuitBreaker().tryAcquire(), KeyedBreakersPermit: () => new g.KeyedBreakers().tryAcquire('k'),
    LimiterPermit: () => new g.Limiter().tryAcquire(), AdmissionPermit: () => new g.Admission().tryAcquire(),
    Region: () => region, RegionCircuitBreaker: () => region.circuitBreaker('cb'), RegionKeyedBreakers: () => region.keyedBreakers('kb'), RegionBulkhead: () => region.bulkhead('bh'),
    RegionLimiter: () => region.limiter('lim'), RegionAdmission: () => region.admission('adm'),
    RegionPermit: () => region.bulkhead('bh').tryAcquire(),
  };
  for (const m of dts.matchAll(/export declare class (\w+) \{([\s\S]*?)\n\}/g)) {
    const [, cls, body] = m;
    // A Fleet needs a Redis to exist (and `join` rejects rather than throws): its
    // arguments are checked the same way in test/fleet.test.js.
    if (cls === 'Fleet') continue;
    for (const mm of body.matchAll(/^ {2}(static )?(constructor|\w+)\(([^)]*(?:\([^)]*\)[^)]*)*)\)/gm)) {
      const [, isStatic, name, list] = mm;
      if (!list.trim()) continue;
      const ps = params(list);
      if (name === 'constructor') {
        out.push({ what: `new ${cls}`, ps, call: (a) => new native[cls](...a) });
      } else if (isStatic) {
        out.push({ what: `${cls}.${name}`, ps, call: (a) => native[cls][name](...a) });
      } else {
        const make = instances[cls];
        if (!make) throw new Error(`no instance for ${cls}`);
        out.push({ what: `${cls}#${name}`, ps, call: (a) => { const o = make(); return o[name](...a); } });
      }
    }
  }
  for (const m of dts.matchAll(/^export declare function (\w+)\(([^)]*(?:\([^)]*\)[^)]*)*)\)/gm)) {
    const [, name, list] = m;
    if (!list.trim()) continue;
    out.push({ what: name, ps: params(list), call: (a) => native[name](...a) });
  }
  return out;
}

test('a wrong type for any argument is a TypeError naming it', (t) => {
  const all = callables();
  assert.ok(all.length > 60, `${all.length} callables`);
  let checked = 0;
  for (const c of all) {
    for (let i = 0; i < c.ps.length; i++) {
      const args = c.ps.slice(0, i).map(([name, , t]) => valid(t, name));
      const name = c.ps[i][0];
      // a symbol is what no parameter takes, except a vector result (where it marks an
      // unobservable value): there a function is as wrong
      args.push(name === 'result' ? () => 1 : Symbol('wrong'));
      assert.throws(() => c.call(args), (e) => {
        assert.ok(e instanceof TypeError, `${c.what}(${name}): ${e && e.constructor.name}: ${e && e.message} (code ${e && e.code})`);
        assert.equal(e.code, 'GUARDS_INVALID_OPTION', `${c.what}(${name}): ${e.message}`);
        assert.equal(e.option, name, `${c.what}(${name}): ${e.message}`);
        return true;
      }, `${c.what}(${name})`);
      checked++;
    }
  }
  assert.ok(checked > 100, `${checked} arguments checked`);
  t.diagnostic(`${all.length} callables, ${checked} arguments`);
});

test('a value out of range is a RangeError naming it', () => {
  const b = new g.CircuitBreaker();
  assert.throws(() => b.tryAcquire(-1n), (e) => e instanceof RangeError && e.option === 'now');
  assert.throws(() => b.tryAcquire(2n ** 64n), (e) => e instanceof RangeError && e.option === 'now');
  assert.throws(() => new g.Limiter().tryAcquire(8), (e) => e instanceof RangeError && e.option === 'priority');
  assert.throws(() => new g.Limiter().tryAcquire(1.5), (e) => e instanceof RangeError && e.option === 'priority');
  assert.throws(() => new g.LatencyTracker().record(-1), (e) => e instanceof RangeError && e.option === 'latency');
  assert.throws(() => new g.LatencyTracker().record(Infinity), (e) => e instanceof RangeError && e.option === 'latency');
  assert.throws(() => g.outcomeOfStatus(70000), (e) => e instanceof RangeError && e.option === 'status');
  assert.throws(() => new g.QueueDiscipline().push(-1), (e) => e instanceof RangeError && e.option === 'id');
  assert.throws(() => new g.RetryPolicy().decide(2 ** 33, 'success'), (e) => e instanceof RangeError && e.option === 'attempt');
  assert.throws(() => new g.Backoff().delayMs(-1), (e) => e instanceof RangeError && e.option === 'retry');
});

test('a class argument of another class is refused, not unwrapped', () => {
  assert.throws(() => new g.RetryDriver(new g.RetryBudget()), (e) => e instanceof TypeError && e.option === 'policy');
  assert.throws(() => new g.RetryDriver(Object.create(g.RetryPolicy.prototype)), (e) => e instanceof TypeError && e.option === 'policy');
  assert.throws(() => new g.Hedging().shouldHedge(1n, 0, true, new g.CircuitBreaker()), (e) => e instanceof TypeError && e.option === 'budget');
  assert.throws(() => g.Deadline.none().min({}), (e) => e instanceof TypeError && e.option === 'other');
});

test('the fast paths refuse a wrong argument type by name too', () => {
  const f = new g.Limiter()._fast();
  assert.throws(() => f.acquire('high'), (e) => e instanceof TypeError && e.option === 'priority');
  assert.throws(() => f.acquire(9), (e) => e instanceof RangeError && e.option === 'priority');
  assert.throws(() => f.report(0, 'success'), (e) => e instanceof TypeError && e.option === 'outcome');
  const k = new g.KeyedBreakers()._fast();
  assert.throws(() => k.acquire(42), (e) => e instanceof TypeError && e.option === 'key');
  const d = new native.RetryDrivers(new g.RetryPolicy())._fast();
  assert.throws(() => d.begin(-1), (e) => e instanceof RangeError && e.option === 'slot');
  assert.throws(() => d.report(0, 0, -1), (e) => e instanceof RangeError && e.option === 'slot', 'no driver in slot 0 yet');
});
