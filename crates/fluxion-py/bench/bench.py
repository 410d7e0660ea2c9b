"""Python-binding benchmarks for BENCHMARKS.md ("Python"). Ratios from one run,
medians of repetitions. Needs a release build of the extension and of the CLI:

    pip install ./crates/fluxion-py[jax]     # or without [jax]: no JAX column
    cargo build --release -p fluxion-cli
    taskset -c 1 python crates/fluxion-py/bench/bench.py
"""

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


LOSS = """
fn loss(w: [Real]) -> Real { sum(map(|a| 0.5 * a * a + log(1.0 + a * a) * sin(a), w)) }
fn grad_loss(w: [Real]) -> [Real] { grad(loss, w) }
fn w() -> [Real] { build(100000, |i| to_real(i) / 100000.0 - 0.5) }
fn main() -> Real { sum(grad_loss(w())) }
fn input() -> Real { sum(w()) }
"""


def jax_loss():
    """The same loss in JAX (jit, float64), or None without JAX."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    g = jax.jit(jax.grad(lambda w: jnp.sum(0.5 * w * w + jnp.log(1.0 + w * w) * jnp.sin(w))))
    return lambda w: g(w).block_until_ready()


def main():
    src = (
        "fn unit() -> () { () } fn add(x: Real, y: Real) -> Real { x + y }"
        " fn total(x: [Real]) -> Real { sum(x) }"
    )
    py_add = lambda x, y: x + y
    t_py = per_call(lambda: py_add(1.0, 2.0), calls=200000)
    for backend in ("native", "interp"):
        m = fluxion.compile(src, backend=backend)
        calls = 20000 if backend == "native" else 500
        t_unit = per_call(m.unit, calls)
        t_add = per_call(lambda: m.add(1.0, 2.0), calls)
        print(f"call overhead ({backend}): unit() {t_unit * 1e6:.2f} us, add(1.0, 2.0) "
              f"{t_add * 1e6:.2f} us, a Python function {t_py * 1e9:.0f} ns: "
              f"ratio {t_add / t_py:.0f}x")
        big = np.random.default_rng(0).random(10**7)
        t_flx = median_time(lambda: m.total(big), 5)
        t_np = median_time(lambda: np.sum(big), 5)
        print(f"sum of 10^7 float64 ({backend}): fluxion {t_flx * 1e3:.1f} ms, numpy.sum "
              f"{t_np * 1e3:.1f} ms (ratio {t_flx / t_np:.1f}x)")

    # The gradient of a 10^5-element loss: Python (native), the CLI (native: the
    # process running the gradient, less the same process running its input alone —
    # start, compile from the cache, building w), JAX.
    m = fluxion.compile(LOSS)
    w = np.arange(100000) / 100000.0 - 0.5
    g = fluxion.grad(m.loss)
    t_grad = median_time(lambda: g(w), 11)

    def cli_time(entry):
        with tempfile.NamedTemporaryFile("w", suffix=".flx", delete=False) as f:
            f.write(LOSS)
        cmd = [str(CLI), "run", f.name, "--backend", "native", "--entry", entry]
        subprocess.run(cmd, capture_output=True, check=True)
        return median_time(lambda: subprocess.run(cmd, capture_output=True, check=True), 21), cmd

    t_cli, cmd = cli_time("main")
    t_base, _ = cli_time("input")
    t_cli_grad = max(t_cli - t_base, 1e-9)
    line = (f"gradient of a 10^5-element loss: Python (native) {t_grad * 1e3:.2f} ms, CLI "
            f"{t_cli_grad * 1e3:.2f} ms (process {t_cli * 1e3:.1f} ms less its input alone "
            f"{t_base * 1e3:.1f} ms; Python/CLI {t_grad / t_cli_grad:.2f})")
    jg = jax_loss()
    if jg is not None:
        jg(w)
        t_jax = median_time(lambda: jg(w), 11)
        line += f", JAX jit {t_jax * 1e3:.2f} ms (Python/JAX {t_grad / t_jax:.2f})"
    print(line)
    print("CLI command:", " ".join(cmd))

    # vmap of a gradient over 1,000 points against a Python loop of the same calls.
    m = fluxion.compile("fn f(x: [Real], s: Real) -> Real { s * sum(map(|a| sin(a) * a, x)) }")
    xs = np.random.default_rng(2).standard_normal((1000, 8))
    vg = fluxion.vmap(fluxion.grad(m.f), in_axes=(0, None))
    gf = fluxion.grad(m.f)
    vg(xs, 1.5)
    gf(xs[0], 1.5)
    t_vmap = median_time(lambda: vg(xs, 1.5), 11)
    t_loop = median_time(lambda: [gf(x, 1.5) for x in xs], 11)
    print(f"vmap(grad) over 1,000 points of 8: {t_vmap * 1e3:.2f} ms, a Python loop "
          f"{t_loop * 1e3:.2f} ms (ratio loop/vmap {t_loop / t_vmap:.1f}x)")


if __name__ == "__main__":
    main()
