'use strict';
// The native addon (node/src, built by `make node` into node/guards.node).
module.exports = require('../guards.node');
