#!/bin/bash
# Checked mode's cost on two trees (e.g. main and a branch), kernel by kernel back to back,
# so that a loaded machine disturbs both alike; each line is a tree and the row
# benchmarks/checked_overhead.py prints for one kernel (one thread, best of REPEAT).
#     benchmarks/checked_overhead_ab.sh BEFORE_TREE AFTER_TREE [REPEAT]
set -u
before=$1 after=$2 repeat=${3:-15}
kernels=$(cd "$after/benchmarks" && python3 -c "from cases import CASES; print(*CASES)")
for k in $kernels; do
    for tree in "$before" "$after"; do
        row=$(cd "$tree" && SPIRVJIT_NUM_THREADS=1 PYTHONPATH="$tree" timeout 600 \
            python3 benchmarks/checked_overhead.py --repeat "$repeat" "$k" 2>&1 | tail -1)
        echo "$(basename "$tree") $row"
    done
done
