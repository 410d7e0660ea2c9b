"""The native backend (the default where a C compiler is present) against the
interpreter: the same results bit for bit, each function compiled once, the
interpreter taking over (with a warning) where native code cannot run, and the call
overhead reported (printed with `pytest -s`, never asserted)."""

import time

import numpy as np
import pytest

import fluxion
from conftest import SOURCE

W = np.array([0.3, -1.2, 0.7, 2.0])


@pytest.fixture(scope="module")
def both():
    return fluxion.compile(SOURCE, "test.flx"), fluxion.compile(SOURCE, "test.flx", backend="interp")


def same(a, b):
    """Equal values, reals bit for bit (NumPy arrays, tuples, lists, floats)."""
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    elif isinstance(a, float):
        assert np.float64(a).tobytes() == np.float64(b).tobytes(), (a, b)
    else:
        assert a == b


def test_native_is_the_default_and_gives_the_interpreters_bits(both):
    native, interp = both
    assert native.backend == "native" and interp.backend == "interp"
    assert native.loss.backend == "native"
    calls = [
        ("loss", (W, 1.7)),
        ("vecfn", (np.array([0.5, -0.3]),)),
        ("scalar", (0.8,)),
        ("pair", (0.4, 3)),
        ("area", (native.Rect(2.0, 3.5),)),
        ("ident_matrix", (np.arange(6.0).reshape(2, 3),)),
        ("ident_tuple", ((1.5, (2, True)),)),
        ("shapes", (1.25,)),
    ]
    for name, args in calls:
        same(getattr(native, name)(*args), getattr(interp, name)(*args))
    for t in (fluxion.grad, fluxion.value_and_grad, fluxion.hessian):
        for ad in ("delta", "chad", "fwd"):
            same(t(native.loss, ad=ad)(W, 1.7), t(interp.loss, ad=ad)(W, 1.7))
    same(fluxion.jacobian(native.vecfn)(W[:2]), fluxion.jacobian(interp.vecfn)(W[:2]))
    same(
        fluxion.jvp(native.loss, (W, 1.7), (W, 0.5)),
        fluxion.jvp(interp.loss, (W, 1.7), (W, 0.5)),
    )
    same(
        fluxion.taylor(native.scalar, (0.8,), (1.0,), 4),
        fluxion.taylor(interp.scalar, (0.8,), (1.0,), 4),
    )


def test_backend_per_function_and_per_transformation(both):
    native, interp = both
    assert native.scalar.with_backend("interp").backend == "interp"
    assert interp.scalar.with_backend("native").backend == "native"
    g = fluxion.grad(interp.loss, backend="native")
    assert g.backend == "native"
    same(g(W, 1.7), fluxion.grad(interp.loss)(W, 1.7))
    with pytest.raises(fluxion.FluxionArgumentError, match="unknown backend"):
        fluxion.compile("fn f() -> Real { 1.0 }", backend="gpu")
    with pytest.raises(fluxion.FluxionArgumentError, match="unknown backend"):
        native.scalar.with_backend("gpu")


def test_each_function_is_compiled_once():
    m = fluxion.compile("fn f(x: [Real]) -> Real { sum(map(|a| a * a * 3.0, x)) }")
    g = fluxion.grad(m.f)
    before = fluxion._fluxion.native_compiles()
    g(W)
    assert fluxion._fluxion.native_compiles() == before + 1
    for _ in range(5):
        g(W)
        fluxion.grad(m.f)(W)
    assert fluxion._fluxion.native_compiles() == before + 1
    m.f(W)
    assert fluxion._fluxion.native_compiles() == before + 2


def test_errors_and_deep_recursion_natively(both):
    native, interp = both
    for m in both:
        with pytest.raises(fluxion.FluxionRuntimeError, match="out of range") as e:
            m.boom(W)
        assert e.value.line is not None
    deep = "fn deep(n: Int) -> Real { if n == 0 { 0.0 } else { 1.0 + deep(n - 1) } }"
    # Deeper than the caller's thread allows: the call runs again on a big stack.
    assert fluxion.compile(deep).deep(200_000) == 200_000.0


def test_a_hand_over_to_the_interpreter_warns():
    m = fluxion.compile("fn k(x: Real) -> fn(Real) -> Real { |y| x * y }")
    with pytest.warns(RuntimeWarning, match="running in the interpreter"):
        with pytest.raises(fluxion.FluxionArgumentError):
            m.k(1.0)


def test_call_overhead_is_reported(both):
    native, interp = both
    for m in both:
        m.pair(0.4, 3)
        n = 2000 if m.backend == "native" else 200
        t = time.perf_counter()
        for _ in range(n):
            m.pair(0.4, 3)
        us = (time.perf_counter() - t) / n * 1e6
        print(f"\ncall overhead, {m.backend}: {us:.2f} us per call of pair(Real, Int)")
