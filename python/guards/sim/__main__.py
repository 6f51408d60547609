"""``python -m guards.sim``: see :mod:`guards.sim.cli`."""

import sys

from .cli import main

sys.exit(main())
