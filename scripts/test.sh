#!/usr/bin/env bash
# Set up (see setup.sh), then lint, check formatting and run the test suite.
# Extra arguments go to pytest (e.g. -k frontend, -m "not slow").
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh" # sets PY and REPO
cd "$REPO"
"$PY" -m ruff check .
"$PY" -m ruff format --check .
status=0
"$PY" -m pytest -q "$@" || status=$?
if ((status == 5)); then
    # pytest's "no tests collected": a broken test layout, never a pass.
    echo "test.sh: FAILED: pytest collected no tests" >&2
fi
exit "$status"
