#!/bin/sh
# Runs GradBench's evals against `fluxion gradbench` and GradBench's hand-written C++
# tool (`manual`) in one sitting, with GradBench's own runner and validators, each tool
# pinned to one core, then prints per workload ours/manual for the primal and the
# derivative and each tool's derivative/primal (gradbench/compare.py). Usage:
#   GB=/path/to/gradbench PYTHON=/path/to/venv/bin/python gradbench/compare.sh [EVAL ...]
# GB as for validate.sh, with the `manual` tool built (`make -C tools/manual`). The
# sizes are those of "Comparing with the field" in the team's GradBench notes;
# SIZES_<eval> overrides them, RUNS the run counts, CORE the core, AD and BACKEND our
# tool's flags. Logs: ${LOGS:-gradbench-compare}/EVAL-{manual,fluxion}.jsonl.
set -eu
: "${GB:?set GB to a gradbench clone}"
PYTHON=${PYTHON:-python3}
FLUXION=$(realpath "${FLUXION:-target/release/fluxion}")
LOGS=$(realpath -m "${LOGS:-gradbench-compare}")
HERE=$(dirname "$(realpath "$0")")
EVALS=${*:-lse llsq gmm det kmeans ode lstm ba ht}
RUNS=${RUNS:---min-runs 3 --min-seconds 0.3}
CORE=${CORE:-1}
mkdir -p "$LOGS"
cd "$GB"
export PYTHONPATH="$GB/python/gradbench"
for eval in $EVALS; do
    case $eval in
        lse) default="" ;;
        llsq) default="" ;;
        gmm) default="-d 2 10 20 64 -k 5 25 100" ;;
        det) default="-l 5 6 7 8 9" ;;
        kmeans) default="-k 10 100 -n 1000 10000 -d 8 16" ;;
        ode) default="-n 1000 10000 -s 1 10" ;;
        lstm) default="-l 2 4 -c 1024 4096" ;;
        ba) default="--min 1 --max 6" ;;
        ht) default="--min 1 --max 5 --model small" ;;
        *) echo "compare.sh: no manual tool for eval $eval" >&2; exit 2 ;;
    esac
    sizes=$(eval "printf '%s' \"\${SIZES_$eval:-\$default}\"")
    ours="$FLUXION gradbench${AD:+ --ad $AD}${BACKEND:+ --backend $BACKEND}"
    theirs="$PYTHON python/gradbench/gradbench/cpp.py manual"
    for tool in manual fluxion; do
        if [ $tool = manual ]; then cmd=$theirs; else cmd=$ours; fi
        echo "== $eval $sizes ($tool)"
        target/release/gradbench run -o "$LOGS/$eval-$tool.jsonl" \
            --eval "$PYTHON python/gradbench/gradbench/evals/$eval/run.py $sizes $RUNS" \
            --tool "taskset -c $CORE $cmd" >/dev/null || echo "   (the runner reported a failure)"
    done
done
python3 "$HERE/compare.py" "$LOGS" $EVALS
