#!/usr/bin/env bash
# Set up (see setup.sh), then compile, JIT, check and time the example kernels.
# Extra arguments go to examples/demo.py (--repeats N, --producer translator).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh" # sets PY and REPO
cd "$REPO"
exec "$PY" examples/demo.py "$@"
