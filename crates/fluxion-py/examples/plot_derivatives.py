"""Plot a function and its first three derivatives (Taylor mode), saved to a file.

    python plot_derivatives.py [out.png]
"""

import sys
from math import factorial

import numpy as np

import fluxion

SOURCE = """
fn f(x: Real) -> Real { sin(3.0 * x) * exp(-0.3 * x * x) }
"""


def derivatives(xs, order=3):
    """f and its derivatives up to `order` at each x: row k is f^(k)."""
    m = fluxion.compile(SOURCE, name="plot.flx")
    rows = np.zeros((order + 1, len(xs)))
    for i, x in enumerate(xs):
        value, coeffs = fluxion.taylor(m.f, (x,), (1.0,), order)
        rows[0, i] = value
        # c_k = f^(k)(x) / k!
        rows[1:, i] = coeffs * [factorial(k) for k in range(1, order + 1)]
    return rows


def main(out="derivatives.png"):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = np.linspace(-3, 3, 301)
    rows = derivatives(xs)
    fig, ax = plt.subplots(figsize=(7, 4))
    for k, row in enumerate(rows):
        ax.plot(xs, row, label="f" + "'" * k if k else "f")
    ax.set_xlabel("x")
    ax.legend()
    ax.set_title("sin(3x)·exp(-0.3x²) and its derivatives (Fluxion, Taylor mode)")
    fig.savefig(out, dpi=100)
    print("wrote", out)
    return out


if __name__ == "__main__":
    main(*sys.argv[1:])
