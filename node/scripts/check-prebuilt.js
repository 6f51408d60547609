'use strict';
// `npm pack` / `npm publish` (prepack): the package must carry a prebuilt addon and the
// licence files, which `make dist-node` puts in node/; a package without them would
// install and then fail at require.
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const addons = fs.readdirSync(root).filter((f) => /^guards\..+\.node$/.test(f));
const missing = ['LICENSE-MIT', 'LICENSE-APACHE', 'LICENSE-THIRD-PARTY.md'].filter((f) => !fs.existsSync(path.join(root, f)));
if (addons.length === 0 || missing.length) {
  console.error('guards: nothing to pack: ' +
    (addons.length ? '' : 'no prebuilt addon (guards.<platform>.node) ') +
    (missing.length ? `missing ${missing.join(', ')} ` : '') +
    '-- run `make dist-node` from the repository root');
  process.exit(1);
}
console.error(`guards: packing the prebuilt addon(s) ${addons.join(', ')}`);
