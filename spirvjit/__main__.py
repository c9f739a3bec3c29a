"""``python -m spirvjit``: the same as the ``spirvjit`` command."""

import sys

from .cli import main

sys.exit(main())
