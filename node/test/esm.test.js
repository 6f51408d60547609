'use strict';
// The ES module entry (lib/index.mjs) exports every name of the CommonJS one, the same
// objects, and the package as its default export.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { pathToFileURL } = require('node:url');

test('lib/index.mjs exports what lib/index.js does, by name and as default', async () => {
  const cjs = require('../lib/index.js');
  const esm = await import(pathToFileURL(path.join(__dirname, '..', 'lib', 'index.mjs')).href);
  const names = Object.keys(esm).filter((k) => k !== 'default').sort();
  assert.deepEqual(names, Object.keys(cjs).sort());
  for (const k of names) assert.equal(esm[k], cjs[k], k);
  assert.equal(esm.default, cjs);
});

test('the exports map sends require to CommonJS and import to the ES module entry', () => {
  const pkg = require('../package.json');
  const dot = pkg.exports['.'];
  assert.equal(dot.require.default, './lib/index.js');
  assert.equal(dot.import.default, './lib/index.mjs');
  assert.equal(dot.require.types, './lib/index.d.ts');
  assert.equal(dot.import.types, './lib/index.d.mts');
});
