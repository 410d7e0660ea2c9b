#!/bin/sh
# Runs GradBench's evals against `fluxion gradbench` with GradBench's own runner and
# writes one log per eval. Usage (from anywhere):
#   GB=/path/to/gradbench PYTHON=/path/to/venv/bin/python FLUXION=target/release/fluxion \
#     gradbench/validate.sh [--ad MODE] [EVAL ...]
# GB is a clone of github.com/gradbench/gradbench with its runner built
# (`cargo build --package=gradbench --release`) and the C++ `manual` tool built (the
# validators' reference): gradbench/README.md, "Running the evals". Logs go to
# ${LOGS:-gradbench-logs}/EVAL[-MODE].jsonl; summarise them with gradbench/summary.py.
# The sizes are small (the interpreter is 20-400x slower than C); SIZES_<eval>
# overrides an eval's size flags; BACKEND=interp runs the tool in the interpreter.
set -eu
: "${GB:?set GB to a gradbench clone}"
PYTHON=${PYTHON:-python3}
FLUXION=$(realpath "${FLUXION:-target/release/fluxion}")
LOGS=$(realpath -m "${LOGS:-gradbench-logs}")
AD=""
if [ "${1:-}" = "--ad" ]; then AD=$2; shift 2; fi
EVALS=${*:-hello lse llsq gmm det kmeans ode lstm ba ht saddle particle}
RUNS=${RUNS:---min-runs 3 --min-seconds 0.3}
mkdir -p "$LOGS"
cd "$GB"
export PYTHONPATH="$GB/python/gradbench"
for eval in $EVALS; do
    case $eval in
        hello|saddle|particle) default="" ;;
        lse) default="-n 2500 5000 10000 20000 40000" ;;
        llsq) default="-n 16 32 64 128 256 512 1024 -m 128" ;;
        gmm) default="-d 2 10 20 -k 5 10 25 -n 1000" ;;
        det) default="-l 5 6 7 8 9" ;;
        kmeans) default="-k 10 100 -n 1000 -d 8 16" ;;
        ode) default="-n 1000 10000 -s 1 10" ;;
        lstm) default="-l 2 4 -c 1024" ;;
        ba) default="--min 1 --max 2" ;;
        ht) default="--min 1 --max 2 --model small --variant simple" ;;
        *) echo "unknown eval $eval" >&2; exit 2 ;;
    esac
    sizes=$(eval "printf '%s' \"\${SIZES_$eval:-\$default}\"")
    flags=""
    case $eval in hello) ;; *) flags=$RUNS ;; esac
    tool="$FLUXION gradbench${AD:+ --ad $AD}${BACKEND:+ --backend $BACKEND}"
    log="$LOGS/$eval${AD:+-$AD}${BACKEND:+-$BACKEND}.jsonl"
    echo "== $eval $sizes ($tool)"
    target/release/gradbench run -o "$log" \
        --eval "$PYTHON python/gradbench/gradbench/evals/$eval/run.py $sizes $flags" \
        --tool "taskset -c 0 $tool"
done
