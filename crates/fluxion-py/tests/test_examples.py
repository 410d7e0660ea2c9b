"""The examples run and give the right answers."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).parent.parent / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_logistic_regression_converges_to_the_optimum():
    pytest.importorskip("scipy")
    ex = load("logistic_regression")
    x, y = ex.make_data()
    result = ex.fit(x, y)
    assert result.success
    # At the optimum the gradient vanishes; compare with a NumPy implementation.
    w = result.x
    z = x @ w[:-1] + w[-1]
    p = 1 / (1 + np.exp(-z))
    g = np.append(x.T @ (p - y), np.sum(p - y)) / len(y) + 2e-3 * w
    assert np.linalg.norm(g) < 1e-5
    np.testing.assert_allclose(np.sign(w[:3]), [1, -1, 1])


def test_plot_of_derivatives(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed")
    ex = load("plot_derivatives")
    xs = np.array([-0.7, 0.0, 1.3])
    rows = ex.derivatives(xs)
    f = lambda x: np.sin(3 * x) * np.exp(-0.3 * x * x)
    h = 1e-4  # central second difference: error ~h² + ε/h² ≈ 1e-8 relative
    np.testing.assert_allclose(rows[0], f(xs))
    np.testing.assert_allclose(rows[1], (f(xs + h) - f(xs - h)) / (2 * h), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(
        rows[2], (f(xs + h) - 2 * f(xs) + f(xs - h)) / h**2, rtol=1e-5, atol=1e-5
    )
    out = tmp_path / "d.png"
    ex.main(str(out))
    assert out.stat().st_size > 1000


def test_dask_gradient_over_chunks_equals_the_whole_gradient():
    pytest.importorskip("distributed", reason="dask.distributed is not installed")
    ex = load("dask_gradient")
    g, whole = ex.main()
    # The same sums in another order: rounding only (values of order 1, 20,000 rows).
    np.testing.assert_allclose(g, whole, rtol=1e-12, atol=1e-14)
    assert np.linalg.norm(whole) > 0.1
