"""Fluxion functions inside JAX programs (`fluxion.jax.function`): values, `jit`,
`jax.grad`, `jax.jvp`, `jax.vmap`, Hessians, against the same model written in JAX
and against Fluxion's own derivatives."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

import fluxion  # noqa: E402
import fluxion.jax as fjax  # noqa: E402

SRC = """
fn loss(w: [Real], x: [[Real]], y: [Real]) -> Real {
    sumbuild(length(y), |i| { let r = tanh(dot(w, x[i])) - y[i]; r * r })
}
fn feature(w: [Real]) -> [Real] { map(|a| sin(a) * a, w) }
fn scale(s: Real, w: [Real]) -> Real { s * sum(map(|a| a * a, w)) }
fn affine(w: [Real], b: Real) -> Real { sum(map(|a| tanh(a * b + 0.3) * a, w)) + b * b * b }
fn sq(v: [Real]) -> [Real] { map(|a| a * a * a, v) }
fn pick(v: [Real], n: Int) -> Real { v[n - 1] * v[0] }
"""

RNG = np.random.default_rng(3)
X, Y, W = RNG.standard_normal((20, 3)), RNG.standard_normal(20), RNG.standard_normal(3)


def jax_loss(w, x, y):
    return jnp.sum((jnp.tanh(x @ w) - y) ** 2)


@pytest.fixture(scope="module")
def m():
    return fluxion.compile(SRC)


def close(a, b, tol=1e-12):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def test_values_and_jit(m):
    loss = fjax.function(m.loss)
    close(loss(W, X, Y), jax_loss(W, X, Y))
    close(jax.jit(loss)(W, X, Y), jax_loss(W, X, Y))


def test_grad_inside_a_jax_model(m):
    loss = fjax.function(m.loss)

    def model(w):  # JAX code around the Fluxion function
        return 0.5 * loss(jnp.tanh(w), X, Y) + jnp.sum(w**2)

    def model_jax(w):
        return 0.5 * jax_loss(jnp.tanh(w), X, Y) + jnp.sum(w**2)

    close(jax.grad(model)(W), jax.grad(model_jax)(W))
    close(jax.jit(jax.grad(model))(W), jax.grad(model_jax)(W))
    # Fluxion's own gradient, in Fluxion's AD.
    close(jax.grad(loss)(W, X, Y), fluxion.grad(m.loss)(W, X, Y))
    # In two arguments at once.
    gw, gy = jax.grad(loss, argnums=(0, 2))(W, X, Y)
    close(gy, jax.grad(jax_loss, argnums=2)(W, X, Y))


def test_jvp_vmap_and_hessian(m):
    loss = fjax.function(m.loss)
    v = RNG.standard_normal(3)
    y, t = jax.jvp(lambda w: loss(w, X, Y), (W,), (v,))
    y2, t2 = jax.jvp(lambda w: jax_loss(w, X, Y), (W,), (v,))
    close(y, y2)
    close(t, t2)
    ws = RNG.standard_normal((4, 3))
    close(jax.vmap(loss, in_axes=(0, None, None))(ws, X, Y), [jax_loss(w, X, Y) for w in ws])
    close(
        jax.vmap(jax.grad(loss), in_axes=(0, None, None))(ws, X, Y),
        jax.vmap(jax.grad(jax_loss), in_axes=(0, None, None))(ws, X, Y),
    )
    close(jax.hessian(loss)(W, X, Y), jax.hessian(jax_loss)(W, X, Y), 1e-10)


def test_vector_results_and_scalar_arguments(m):
    feature = fjax.function(m.feature)
    close(
        jax.jacfwd(feature)(W), jax.jacfwd(lambda w: jnp.sin(w) * w)(W)
    )
    close(
        jax.grad(lambda w: jnp.sum(feature(w) ** 2))(W),
        jax.grad(lambda w: jnp.sum((jnp.sin(w) * w) ** 2))(W),
    )
    scale = fjax.function(m.scale)
    close(jax.grad(scale)(2.0, W), jnp.sum(W**2))


def test_second_order_in_real_arguments_and_of_vector_results(m):
    affine = fjax.function(m.affine)

    def jax_affine(w, b):
        return jnp.sum(jnp.tanh(w * b + 0.3) * w) + b**3

    v = jnp.concatenate([W, jnp.array([0.8])])
    h = jax.hessian(lambda v: affine(v[:-1], v[-1]))(v)
    close(h, jax.hessian(lambda v: jax_affine(v[:-1], v[-1]))(v), 1e-10)
    close(jax.grad(jax.grad(affine, argnums=1), argnums=1)(W, 0.8),
          jax.grad(jax.grad(jax_affine, argnums=1), argnums=1)(W, 0.8), 1e-10)
    sq = fjax.function(m.sq)
    z = jnp.array([0.5, -1.5, 2.0])
    f = lambda s: jnp.sum(sq(s * z))
    close(jax.grad(jax.grad(f))(1.3), jax.grad(jax.grad(lambda s: jnp.sum((s * z) ** 3)))(1.3))


def test_second_order_in_a_matrix_argument(m):
    loss = fjax.function(m.loss)
    x, y = X[:3], Y[:3]
    close(
        jax.hessian(loss, argnums=1)(W, x, y),
        jax.hessian(jax_loss, argnums=1)(W, x, y),
        1e-10,
    )


def test_a_given_result_shape_serves_the_derivatives_too(m):
    # Zeros are not a valid input (`v[n - 1]` with n = 0): the shape is given.
    pick = fjax.function(m.pick, result_shape=())
    v = jnp.arange(1.0, 4.0)
    close(pick(v, 2), 2.0)
    close(jax.grad(pick)(v, 2), fluxion.grad(m.pick)(np.asarray(v), 2))
    close(jax.hessian(pick)(v, 2), [[0, 1, 0], [1, 0, 0], [0, 0, 0]])


def test_errors(m):
    with pytest.raises(fluxion.FluxionArgumentError):
        fjax.function(lambda w: w)


def test_a_result_shape_that_depends_on_values_is_an_error_not_a_wrong_answer():
    # On zeros the result is empty; on [3, 2] it has three elements: the probed shape
    # is wrong, and the call says so instead of returning an empty array.
    m = fluxion.compile("fn f(x: [Real]) -> [Real] { build(to_int(x[0]), |i| x[1] * to_real(i)) }")
    with pytest.raises(fluxion.FluxionArgumentError, match="empty result"):
        fjax.function(m.f)(jnp.array([3.0, 2.0]))
    close(fjax.function(m.f, result_shape=(3,))(jnp.array([3.0, 2.0])), [0.0, 2.0, 4.0])
    # Non-empty on zeros, another shape at the call: the callback says so.
    g = fluxion.compile("fn g(x: [Real]) -> [Real] { build(to_int(x[0]) + 1, |i| x[1]) }")
    with pytest.raises(Exception, match="result_shape"):
        np.asarray(fjax.function(g.g)(jnp.array([2.0, 5.0])))
