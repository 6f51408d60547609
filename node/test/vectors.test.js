'use strict';
// The conformance vectors (tests/vectors) through the public Node API: every file replayed
// by the shared interpreter with the Node backend (test/vectors/), with results identical
// to Rust's. Cases the Node API cannot run are reported as not covered, each for a reason
// listed here; values it cannot show are reported as unobserved, never as equal.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const native = require('../lib/native');
const { replay } = require('./vectors/backend');

const DIR = path.join(__dirname, '..', '..', 'tests', 'vectors');

/** What the Node API lacks, by file and op: the only cases allowed to be not covered. */
const GAPS = [
  { file: 'circuit_breaker.json', op: 'new', why: 'the Node API grows a breaker\'s cells to fit its window' },
];
/** Files whose expected values may be unobservable: a float in ns given in ms (limit's
 * long RTT), durations past 2^51 ns (Retry-After and time left at their ceilings). */
const PARTLY = new Set(['limit.json', 'http.json', 'deadline.json']);

test('every vector file replays through the Node API with the results of Rust', () => {
  const s = replay(native.VectorSession.open(DIR));
  const sum = s.summary();
  const report = s.report();
  assert.equal(sum.failed, 0, report);
  assert.equal(sum.fileErrors, 0, report);
  assert.equal(sum.ok, true);
  assert.equal(sum.files, fs.readdirSync(DIR).filter((f) => f.endsWith('.json')).length, 'every file was read');
  assert.ok(sum.compared > 2000, `${sum.compared} expected values compared`);
  const cases = s.cases();
  assert.equal(cases.length, sum.cases);
  for (const c of cases.filter((x) => x.outcome === 'not_covered')) {
    assert.ok(GAPS.some((gap) => gap.file === c.file && gap.op === c.op), `${c.file} \`${c.case}\` not covered at \`${c.op}\`: ${c.reason}`);
  }
  for (const c of cases.filter((x) => x.outcome === 'passed' && x.unobserved > 0)) {
    assert.ok(PARTLY.has(c.file), `${c.file} \`${c.case}\`: ${c.unobserved} values unobserved`);
  }
  // Most of every file runs: a backend that answers "unsupported" to everything would
  // pass the checks above.
  const byFile = new Map();
  for (const c of cases) {
    const f = byFile.get(c.file) || { passed: 0, all: 0 };
    f.all++;
    if (c.outcome === 'passed') f.passed++;
    byFile.set(c.file, f);
  }
  for (const [file, f] of byFile) assert.ok(f.passed >= f.all * 0.7, `${file}: ${f.passed} of ${f.all} cases passed`);
});

test('a changed expectation fails, naming the case, step and values', () => {
  const text = fs.readFileSync(path.join(DIR, 'bulkhead.json'), 'utf8');
  const doc = JSON.parse(text);
  const c = doc.cases.find((x) => x.steps && x.steps.some((st) => st.op === 'in_flight' && 'expect' in st));
  const st = c.steps.find((x) => x.op === 'in_flight' && 'expect' in x);
  st.expect += 1;
  const s = replay(native.VectorSession.fromText('bulkhead.json', JSON.stringify(doc)));
  assert.equal(s.summary().failed, 1);
  const failed = s.cases().find((x) => x.outcome === 'failed');
  assert.equal(failed.case, c.name);
  assert.equal(failed.op, 'in_flight');
  assert.match(s.report(), /FAILED bulkhead\.json/);
});

test('what the Node API cannot run is reported as not covered, never as passed', () => {
  const doc = {
    guard: 'circuit_breaker',
    cases: [{ name: 'cells', config: { window_size: 129 }, expect_error: { field: 'window_size', kind: 'out_of_range' } }],
  };
  const s = replay(native.VectorSession.fromText('circuit_breaker.json', JSON.stringify(doc)));
  assert.deepEqual({ ...s.summary(), compared: undefined }, { files: 1, cases: 1, passed: 0, partlyObserved: 0, failed: 0, notCovered: 1, fileErrors: 0, compared: undefined, unobserved: 0, ok: true });
});

test('the session refuses a reply it cannot take, by name', () => {
  const s = native.VectorSession.fromText('bulkhead.json', JSON.stringify({ guard: 'bulkhead', cases: [{ name: 'x', steps: [{ op: 'in_flight', expect: 0 }] }] }));
  assert.throws(() => s.submitResult(null), (e) => e instanceof TypeError && e.option === 'reply', 'no step handed out yet');
  s.next();
  assert.throws(() => s.submitResult(undefined), (e) => e instanceof TypeError && e.option === 'result');
  assert.throws(() => s.submitResult(() => 1), (e) => e instanceof TypeError && e.option === 'result');
  assert.throws(() => s.submitConfigError(1, 'zero'), (e) => e instanceof TypeError && e.option === 'field');
  assert.throws(() => native.VectorSession.open(path.join(DIR, 'no-such-dir')), (e) => e instanceof TypeError && e.option === 'path');
});
