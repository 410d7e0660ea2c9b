"""Fit a logistic regression with scipy.optimize.minimize, using Fluxion's gradient
and Hessian-vector product (trust-region Newton-CG).

    python logistic_regression.py
"""

from pathlib import Path

import numpy as np
from scipy.optimize import minimize

import fluxion

HERE = Path(__file__).parent


def make_data(n=200, d=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    true_w = np.array([1.5, -2.0, 0.5, 0.3])
    p = 1 / (1 + np.exp(-(x @ true_w[:d] + true_w[d])))
    y = (rng.random(n) < p).astype(np.float64)
    return x, y


def fit(x, y, l2=1e-3):
    m = fluxion.load(HERE / "logistic.flx")
    grad = fluxion.grad(m.loss)  # with respect to w (argnums=0)

    def hessp(w, v, *args):
        # Hessian-vector product: the directional derivative of the gradient.
        return fluxion.jvp(grad, (w, *args), (v,), argnums=0)[1]

    w0 = np.zeros(x.shape[1] + 1)
    return minimize(m.loss, w0, args=(x, y, l2), jac=grad, hessp=hessp, method="trust-ncg")


def main():
    x, y = make_data()
    result = fit(x, y)
    print("converged:", result.success, "loss:", result.fun)
    print("weights:", np.round(result.x, 3))
    return result


if __name__ == "__main__":
    main()
