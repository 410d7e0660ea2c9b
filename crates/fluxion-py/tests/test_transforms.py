"""Every transformation against central finite differences (conftest.py: step and
tolerance)."""

import numpy as np
import pytest

import fluxion
from conftest import central_grad, central_jacobian, close

W = np.array([0.3, -1.2, 0.7, 2.0])
S = 1.7


def test_grad_in_each_argument(m):
    close(fluxion.grad(m.loss)(W, S), central_grad(lambda w: m.loss(w, S), W))
    ds = (m.loss(W, S + 1e-5) - m.loss(W, S - 1e-5)) / 2e-5
    close(fluxion.grad(m.loss, argnums=1)(W, S), ds)
    gw, gs = fluxion.grad(m.loss, argnums=(0, 1))(W, S)
    close(gw, central_grad(lambda w: m.loss(w, S), W))
    close(gs, ds)
    (only,) = fluxion.grad(m.loss, argnums=(0,))(W, S)
    close(only, gw)
    close(fluxion.grad(m.loss, argnums=-1)(W, S), ds)
    for bad in (-3, 2):
        with pytest.raises(fluxion.FluxionArgumentError, match="out of range"):
            fluxion.grad(m.loss, argnums=bad)


def test_value_and_grad(m):
    v, g = fluxion.value_and_grad(m.loss)(W, S)
    assert v == m.loss(W, S)
    close(g, central_grad(lambda w: m.loss(w, S), W))


def test_jacobian_and_hessian(m):
    x = np.array([0.5, -0.3])
    close(fluxion.jacobian(m.vecfn)(x), central_jacobian(m.vecfn, x))
    h = fluxion.hessian(m.loss)(W, S)
    assert h.shape == (4, 4)
    g = fluxion.grad(m.loss)
    close(h, central_jacobian(lambda w: g(w, S), W))


def test_jvp_against_directional_difference(m):
    v = np.array([1.0, 0.5, -0.25, 2.0])
    out, tan = fluxion.jvp(m.loss, (W, S), (v,), argnums=0)
    assert out == m.loss(W, S)
    close(tan, (m.loss(W + 1e-5 * v, S) - m.loss(W - 1e-5 * v, S)) / 2e-5)
    # All arguments (jax.jvp): an Int argument's tangent is None.
    out, tan = fluxion.jvp(m.pair, (0.4, 3), (1.0, None))
    close(tan, (m.pair(0.4 + 1e-5, 3) - m.pair(0.4 - 1e-5, 3)) / 2e-5)


def test_vjp_pullback_is_a_callable(m):
    x = np.array([0.5, -0.3])
    value, pullback = fluxion.vjp(m.vecfn, x)
    np.testing.assert_array_equal(value, m.vecfn(x))
    ct = np.array([2.0, -1.0])
    (cx,) = pullback(ct)
    close(cx, ct @ central_jacobian(m.vecfn, x))
    value, pullback = fluxion.vjp(m.loss, W, S)
    cw, cs = pullback(1.0)
    close(cw, central_grad(lambda w: m.loss(w, S), W))


def test_taylor_coefficients(m):
    # c_j = f^(j)(x)/j! along v = 1 for the scalar x³ + sin x.
    x = 0.8
    value, cs = fluxion.taylor(m.scalar, (x,), (1.0,), 3)
    assert value == m.scalar(x)
    d1 = 3 * x**2 + np.cos(x)
    d2 = 6 * x - np.sin(x)
    d3 = 6 - np.cos(x)
    close(cs, [d1, d2 / 2, d3 / 6])
    close(cs[0], central_grad(lambda a: m.scalar(float(a[0])), np.array([x]))[0])


def test_jet_mixed_partials(m):
    # The Hessian of loss in w between two directions, and the first-order partials,
    # against fluxion.hessian and central differences; one direction is taylor · j!.
    u = np.array([1.0, 0.0, -1.0, 0.5])
    v = np.array([0.0, 2.0, 0.5, 0.0])
    value, ps = fluxion.jet(m.loss, (W, S), [u, v], 2, argnums=0)
    assert value == m.loss(W, S)
    g = central_grad(lambda w: m.loss(w, S), W)
    h = fluxion.hessian(m.loss)(W, S)
    close(ps[:2], [g @ u, g @ v])
    close(ps[2:], [u @ h @ u, u @ h @ v, v @ h @ v])
    _, cs = fluxion.taylor(m.scalar, (0.8,), (1.0,), 3)
    _, ds = fluxion.jet(m.scalar, (0.8,), [1.0], 3)
    close(ds, np.array(cs) * [1.0, 2.0, 6.0])
    with pytest.raises(fluxion.FluxionArgumentError, match="direction"):
        fluxion.jet(m.scalar, (0.8,), [], 2)


def test_transformations_nest(m):
    # d/dx of d/dx (x³ + sin x) = 6x - sin x.
    d2 = fluxion.grad(fluxion.grad(m.scalar))
    close(d2(0.8), 6 * 0.8 - np.sin(0.8))
    assert fluxion.grad(m.scalar).name == "grad(scalar)"


def test_hessian_vector_product_by_jvp_of_grad(m):
    v = np.array([1.0, 0.0, -1.0, 0.5])
    g = fluxion.grad(m.loss)
    _, hv = fluxion.jvp(g, (W, S), (v,), argnums=0)
    close(hv, fluxion.hessian(m.loss)(W, S) @ v)


def test_shape_errors_of_transformations(m):
    import pytest

    with pytest.raises(fluxion.FluxionArgumentError, match="returns Real"):
        fluxion.grad(m.vecfn)
    with pytest.raises(fluxion.FluxionArgumentError, match="out of range"):
        fluxion.grad(m.loss, argnums=2)
    with pytest.raises(fluxion.FluxionArgumentError, match=r"\[Real\] to \[Real\]"):
        fluxion.jacobian(m.loss)
    with pytest.raises(fluxion.FluxionArgumentError, match="order"):
        fluxion.taylor(m.scalar, (1.0,), (1.0,), 0)
