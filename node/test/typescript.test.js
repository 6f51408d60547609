'use strict';
// The package's types (package.json `types`: lib/index.d.ts, over the generated
// index.d.ts) checked by tsc: a program using the idiomatic layer compiles (each of its
// `@ts-expect-error` lines must be an error), and a misspelt option is refused by name.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const fs = require('node:fs');
const { execFileSync } = require('node:child_process');

const ROOT = path.join(__dirname, '..');
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

function tsc(args) {
  try {
    return { ok: true, out: execFileSync(process.execPath, [TSC, ...args], { cwd: ROOT, encoding: 'utf8' }) };
  } catch (e) {
    return { ok: false, out: `${e.stdout}${e.stderr}` };
  }
}

test('package.json `types` names a file that exists', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  assert.ok(fs.existsSync(path.join(ROOT, pkg.types)), pkg.types);
});

test('a program against the types compiles with tsc --strict', () => {
  const r = tsc(['-p', path.join('test', 'types')]);
  assert.ok(r.ok, r.out);
});

test('a misspelt option is a type error naming it', () => {
  const r = tsc(['--noEmit', '--strict', '--target', 'es2022', '--module', 'commonjs', '--moduleResolution', 'node',
    '--types', 'node', '--lib', 'es2022,dom', path.join('test', 'types', 'misspelt.ts')]);
  assert.equal(r.ok, false, 'tsc must refuse it');
  assert.match(r.out, /windowSise/);
  assert.match(r.out, /CircuitBreakerOptions/);
});
