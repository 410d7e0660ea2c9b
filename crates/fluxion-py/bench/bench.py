"""Python-binding benchmarks for BENCHMARKS.md ("Python"). Ratios from one run,
medians of repetitions. Needs a release build of the extension and of the CLI:

    maturin develop --release -m crates/fluxion-py/Cargo.toml
    cargo build --release -p fluxion-cli
    python crates/fluxion-py/bench/bench.py
"""

import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

import fluxion

HERE = Path(__file__).parent
CLI = HERE.parent.parent.parent / "target" / "release" / "fluxion"


def median_time(f, reps):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def per_call(f, calls=2000, reps=5):
    def batch():
        for _ in range(calls):
            f()

    return median_time(batch, reps) / calls


def main():
    m = fluxion.compile(
        "fn unit() -> () { () } fn add(x: Real, y: Real) -> Real { x + y }"
        " fn total(x: [Real]) -> Real { sum(x) }"
    )
    py_add = lambda x, y: x + y
    t_unit = per_call(m.unit)
    t_add = per_call(lambda: m.add(1.0, 2.0))
    t_py = per_call(lambda: py_add(1.0, 2.0), calls=200000)
    print(f"call overhead: unit() {t_unit * 1e6:.1f} us, add(1.0, 2.0) {t_add * 1e6:.1f} us, "
          f"a Python function {t_py * 1e9:.0f} ns: ratio {t_add / t_py:.0f}x")

    big = np.random.default_rng(0).random(10**7)
    t_flx = median_time(lambda: m.total(big), 5)
    t_np = median_time(lambda: np.sum(big), 5)
    t_ident = median_time(lambda: big.copy(), 5)
    print(f"sum of 10^7 float64: fluxion {t_flx * 1e3:.1f} ms, numpy.sum {t_np * 1e3:.1f} ms "
          f"(ratio {t_flx / t_np:.1f}x), one numpy copy {t_ident * 1e3:.1f} ms")

    rng = np.random.default_rng(1)
    n, d, k = 1000, 4, 5
    x = rng.normal(size=(n, d))
    theta = rng.normal(size=k + 2 * k * d) * 0.1
    g = fluxion.grad(fluxion.load(HERE / "gmm.flx").gmm)
    t_grad = median_time(lambda: g(theta, x, k), 5)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([theta.tolist(), x.tolist(), k], f)
    cmd = [str(CLI), "run", str(HERE / "gmm.flx"), "--entry", "grad_gmm", "--args", "@" + f.name]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    cli_grad = np.array(json.loads(out.replace("NaN", '"NaN"'))) if out.startswith("[") else None
    t_cli = median_time(lambda: subprocess.run(cmd, capture_output=True, check=True), 5)
    if cli_grad is not None:
        assert np.allclose(cli_grad, g(theta, x, k), rtol=1e-12, atol=1e-12)
    print(f"GMM gradient (n={n}, d={d}, k={k}, {theta.size} parameters): Python {t_grad * 1e3:.1f} ms, "
          f"CLI {t_cli * 1e3:.1f} ms (ratio Python/CLI {t_grad / t_cli:.2f})")
    print("CLI command:", " ".join(cmd))


if __name__ == "__main__":
    main()
