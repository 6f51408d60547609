'use strict';
// The native addon. In this repository `make node` builds it as node/guards.node; the
// published package carries the prebuilt one for its platform as
// guards.<platform>-<arch>-<libc>.node (see docs/install.md: one binary bundled in the
// package, linux-x64-gnu today). On any other platform, require('guards') throws an Error
// that names the platform found and the ones the package has.

const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');

function libc() {
  if (process.platform !== 'linux') return '';
  const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : null;
  return report?.header?.glibcVersionRuntime ? '-gnu' : '-musl';
}

const platform = `${process.platform}-${process.arch}${libc()}`;

function prebuiltPlatforms() {
  return fs.readdirSync(ROOT)
    .map((f) => /^guards\.(.+)\.node$/.exec(f))
    .filter(Boolean)
    .map((m) => m[1]);
}

function load() {
  const dev = path.join(ROOT, 'guards.node');
  const prebuilt = path.join(ROOT, `guards.${platform}.node`);
  const file = fs.existsSync(dev) ? dev : prebuilt;
  if (!fs.existsSync(file)) {
    const have = prebuiltPlatforms();
    throw new Error(
      `guards: no native addon for this platform (${platform}); this package has prebuilt ` +
      `addons for: ${have.length ? have.join(', ') : 'none'}. Build one from the source ` +
      'repository with `make node` (needs a Rust toolchain).',
    );
  }
  try {
    return require(file);
  } catch (e) {
    const err = new Error(`guards: the native addon ${path.basename(file)} does not load on ` +
      `this platform (${platform}): ${e.message}`);
    err.cause = e;
    throw err;
  }
}

module.exports = load();
