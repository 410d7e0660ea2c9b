#!/usr/bin/env python3
"""Summarises GradBench logs (gradbench/validate.sh) as Markdown: per eval and size,
the primal's and the derivative's fastest `evaluate` run, their ratio, and whether
the eval's validator accepted both outputs; the geometric mean of the ratios.

Usage: gradbench/summary.py LOG.jsonl ...
"""

import json
import math
import sys

# The derivative function of each eval, and the primal it is compared with.
PAIRS = {
    "lse": ("gradient", "primal"),
    "llsq": ("gradient", "primal"),
    "det": ("gradient", "primal"),
    "ode": ("gradient", "primal"),
    "gmm": ("jacobian", "objective"),
    "lstm": ("jacobian", "objective"),
    "ba": ("jacobian", "objective"),
    "ht": ("jacobian", "objective"),
    "kmeans": ("dir", "cost"),
}


def runs_of(path):
    """A log's eval name; description -> function -> (every `evaluate` run in seconds,
    whether the response succeeded and the validator accepted it); the failures."""
    messages, responses, valid = {}, {}, {}
    eval_name = None
    for line in open(path):
        entry = json.loads(line)
        if "message" in entry:
            m = entry["message"]
            messages[m["id"]] = m
            if m["kind"] == "start":
                eval_name = m.get("eval")
            if m["kind"] == "analysis":
                valid[m["of"]] = m["valid"]
        elif "response" in entry:
            r = entry["response"]
            responses[r["id"]] = r
    rows = {}  # description -> function -> (fastest seconds, valid)
    failures = []
    for i, m in messages.items():
        if m["kind"] != "evaluate":
            continue
        r = responses.get(i, {})
        ok = r.get("success", False) and valid.get(i, False)
        if not ok:
            failures.append(f"{m['function']} {m.get('description', '')}: "
                            f"{r.get('error') or 'invalid output'}")
        runs = [t["nanoseconds"] / 1e9 for t in r.get("timings", []) if t["name"] == "evaluate"]
        if runs:
            rows.setdefault(m.get("description", ""), {})[m["function"]] = (runs, ok)
    return eval_name, rows, failures


def summarise(path):
    """`runs_of`, each function's fastest run."""
    name, rows, failures = runs_of(path)
    fastest = {d: {f: (min(runs), ok) for f, (runs, ok) in fs.items()} for d, fs in rows.items()}
    return name, fastest, failures


def main():
    for path in sys.argv[1:]:
        name, rows, failures = summarise(path)
        total = sum(len(f) for f in rows.values())
        print(f"### {name} ({path})\n")
        if name in PAIRS:
            deriv, primal = PAIRS[name]
            print(f"| size | {primal} | {deriv} | ratio | valid |")
            print("|---|---|---|---|---|")
            ratios = []
            for desc, fs in rows.items():
                if deriv in fs and primal in fs:
                    (td, vd), (tp, vp) = fs[deriv], fs[primal]
                    ratios.append(td / tp)
                    print(f"| {desc} | {tp * 1e3:.3f} ms | {td * 1e3:.3f} ms | {td / tp:.2f} | "
                          f"{'yes' if vd and vp else 'NO'} |")
            if ratios:
                gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
                print(f"\ngeometric mean of the ratios: {gm:.2f}")
        else:
            print("| size | function | fastest run | valid |")
            print("|---|---|---|---|")
            for desc, fs in rows.items():
                for f, (t, v) in fs.items():
                    print(f"| {desc} | {f} | {t * 1e3:.3f} ms | {'yes' if v else 'NO'} |")
        print(f"\n{total - len(failures)} of {total} outputs valid")
        for f in failures:
            print(f"- FAILED {f}")
        print()


if __name__ == "__main__":
    main()
