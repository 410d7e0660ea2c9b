#!/usr/bin/env bash
# Runs one fuzz target, its corpus seeded with the examples (CONTRIBUTING.md, "Fuzzing").
# Usage: fuzz/run.sh TARGET [SECONDS]    TARGET: parse | check | run
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: fuzz/run.sh parse|check|run [SECONDS]}
seconds=${2:-60}
mkdir -p "fuzz/corpus/$target"
cp examples/*.flx examples/errors/*.flx fuzz/regressions/*.flx "fuzz/corpus/$target/"
exec cargo fuzz run -s none "$target" "fuzz/corpus/$target" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=4096
