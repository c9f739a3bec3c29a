#!/usr/bin/env bash
# Set up (see setup.sh), then lint, check formatting and run the test suite.
# Extra arguments go to pytest (e.g. -k frontend). Tests marked slow (the long fuzzing,
# memory and full-matrix runs; GPU compiles for every target) are left out unless a -m
# argument is given: `bash scripts/test.sh -m slow` runs them, `-m ""` runs everything.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh" # sets PY and REPO
cd "$REPO"
"$PY" -m ruff check .
"$PY" -m ruff format --check .
status=0
marker=(-m "not slow")
for arg in "$@"; do
    if [[ "$arg" == -m* ]]; then
        marker=()
    fi
done
"$PY" -m pytest -q "${marker[@]}" "$@" || status=$?
if ((status == 5)); then
    # pytest's "no tests collected": a broken test layout, never a pass.
    echo "test.sh: FAILED: pytest collected no tests" >&2
fi
exit "$status"
