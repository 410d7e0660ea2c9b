"""`fluxion.vmap` against a Python loop over the same calls (bit for bit: the map is
the same function applied to the same values), for plain and transformed functions,
stacked as `jax.vmap` stacks."""

import numpy as np
import pytest

import fluxion

RNG = np.random.default_rng(7)
WS = RNG.standard_normal((6, 4))
S = 1.7


def test_vmap_of_a_function_is_the_loop(m):
    got = fluxion.vmap(m.loss, in_axes=(0, None))(WS, S)
    want = np.array([m.loss(w, S) for w in WS])
    assert got.shape == (6,)
    np.testing.assert_array_equal(got, want)
    xs = RNG.standard_normal(5)
    np.testing.assert_array_equal(fluxion.vmap(m.scalar)(xs), [m.scalar(x) for x in xs])
    # Both arguments batched.
    ss = RNG.standard_normal(6)
    np.testing.assert_array_equal(
        fluxion.vmap(m.loss)(WS, ss), [m.loss(w, s) for w, s in zip(WS, ss)]
    )


def test_vmap_of_transformed_functions(m):
    g = fluxion.vmap(fluxion.grad(m.loss), in_axes=(0, None))(WS, S)
    assert g.shape == WS.shape
    np.testing.assert_array_equal(g, np.stack([fluxion.grad(m.loss)(w, S) for w in WS]))
    v, gs = fluxion.vmap(fluxion.value_and_grad(m.loss), in_axes=(0, None))(WS, S)
    np.testing.assert_array_equal(v, [m.loss(w, S) for w in WS])
    np.testing.assert_array_equal(gs, g)
    # vmap of a Hessian: a stack of matrices.
    h = fluxion.vmap(fluxion.hessian(m.loss), in_axes=(0, None))(WS[:2], S)
    assert h.shape == (2, 4, 4)
    np.testing.assert_array_equal(h[1], fluxion.hessian(m.loss)(WS[1], S))


def test_vmap_of_vector_results_and_tuples(m):
    xs = RNG.standard_normal((3, 2))
    got = fluxion.vmap(m.vecfn)(xs)
    np.testing.assert_array_equal(got, np.stack([m.vecfn(x) for x in xs]))
    t = fluxion.vmap(m.ident_tuple)([(1.5, (2, True)), (2.5, (3, False))])
    assert isinstance(t, tuple) and t[0].tolist() == [1.5, 2.5]


def test_vmap_runs_on_both_backends(m):
    interp = m.loss.with_backend("interp")
    np.testing.assert_array_equal(
        fluxion.vmap(interp, in_axes=(0, None))(WS, S),
        fluxion.vmap(m.loss, in_axes=(0, None))(WS, S),
    )


def test_vmap_argument_errors(m):
    with pytest.raises(fluxion.FluxionArgumentError, match="different lengths"):
        fluxion.vmap(m.loss)(WS, np.ones(3))
    with pytest.raises(fluxion.FluxionArgumentError, match="leading axis"):
        fluxion.vmap(m.loss, in_axes=(1, None))
    with pytest.raises(fluxion.FluxionArgumentError, match="2 argument"):
        fluxion.vmap(m.loss, in_axes=(0,))
    with pytest.raises(fluxion.FluxionArgumentError, match="maps no argument"):
        fluxion.vmap(m.loss, in_axes=None)
    with pytest.raises(fluxion.FluxionArgumentError, match="not an array"):
        fluxion.vmap(m.scalar)(3.0)
    with pytest.raises(fluxion.FluxionArgumentError, match="expected"):
        fluxion.vmap(m.loss, in_axes=(0, None))(["no"], S)
