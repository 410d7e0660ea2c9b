#!/usr/bin/env python3
"""Compares `fluxion gradbench` with GradBench's `manual` C++ tool (gradbench/compare.sh's
logs) as Markdown: per eval and workload, the median `evaluate` time of each tool's
primal and derivative, ours/manual for each, and each tool's derivative/primal; the
geometric means per eval and over the evals. A ratio is marked `*` where a validator
rejected either tool's output.

Usage: gradbench/compare.py LOG_DIR EVAL ...
"""

import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summary import PAIRS, runs_of  # noqa: E402


def medians(path):
    """description -> function -> (median seconds, valid)."""
    _, rows, _ = runs_of(path)
    return {d: {f: (statistics.median(runs), ok) for f, (runs, ok) in fs.items()}
            for d, fs in rows.items()}


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main():
    logs, evals = sys.argv[1], sys.argv[2:]
    overall = {"primal": [], "deriv": []}
    summary = []
    for name in evals:
        deriv, primal = PAIRS[name]
        paths = [os.path.join(logs, f"{name}-{t}.jsonl") for t in ("fluxion", "manual")]
        if not all(os.path.exists(p) for p in paths):
            print(f"### {name}: no logs\n")
            continue
        ours, theirs = (medians(p) for p in paths)
        print(f"### {name}\n")
        print(f"| workload | manual {primal} | ours / manual, {primal} | manual {deriv} "
              f"| ours / manual, {deriv} | ours {deriv} / {primal} | manual {deriv} / {primal} |")
        print("|---|---|---|---|---|---|---|")
        rp, rd = [], []
        for desc, fs in theirs.items():
            os_ = ours.get(desc, {})
            if not all(f in fs and f in os_ for f in (primal, deriv)):
                print(f"| {desc} | missing: {sorted(set((primal, deriv)) - set(os_))} |")
                continue
            (mp, vmp), (md, vmd) = fs[primal], fs[deriv]
            (op, vop), (od, vod) = os_[primal], os_[deriv]
            star = lambda ok: "" if ok else "*"  # noqa: E731
            rp.append(op / mp)
            rd.append(od / md)
            print(f"| {desc} | {mp * 1e3:.3f} ms | {op / mp:.2f}{star(vop and vmp)} "
                  f"| {md * 1e3:.3f} ms | {od / md:.2f}{star(vod and vmd)} "
                  f"| {od / op:.2f} | {md / mp:.2f} |")
        print(f"\ngeometric means: ours/manual primal {geomean(rp):.2f}, "
              f"derivative {geomean(rd):.2f}\n")
        if rp:
            overall["primal"].append(geomean(rp))
            overall["deriv"].append(geomean(rd))
            summary.append((name, geomean(rp), geomean(rd)))
    print("### over the evals\n")
    print("| eval | ours / manual, primal | ours / manual, derivative |")
    print("|---|---|---|")
    for name, p, d in summary:
        print(f"| {name} | {p:.2f} | {d:.2f} |")
    print(f"| geomean | {geomean(overall['primal']):.2f} | {geomean(overall['deriv']):.2f} |")


if __name__ == "__main__":
    main()
