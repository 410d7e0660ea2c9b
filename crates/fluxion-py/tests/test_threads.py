"""Calls release the GIL and share nothing mutable: threads may call at once."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import fluxion


def test_concurrent_calls_agree_with_serial_ones(m):
    g = fluxion.grad(m.loss)
    points = [np.linspace(-1, 1, 4) * k for k in range(1, 17)]
    serial = [g(p, 1.5) for p in points]
    with ThreadPoolExecutor(max_workers=8) as pool:
        parallel = list(pool.map(lambda p: g(p, 1.5), points))
    for a, b in zip(serial, parallel):
        np.testing.assert_array_equal(a, b)


def test_gil_is_released_while_fluxion_runs():
    slow = fluxion.compile(
        "fn spin(n: Int) -> Real { sum(build(n, |i| sin(to_real(i)))) }"
    )
    ticks = []
    import threading

    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(1)
            done.wait(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        slow.spin(2_000_000)
    finally:
        done.set()
        t.join()
    # The ticker ran while Fluxion computed (with the GIL held it could not).
    assert len(ticks) > 5


def test_interpreter_threads_and_interpreters_are_kept_between_calls():
    """In the interpreter a call reuses a kept big-stack thread and the interpreter it
    ran on (not a new thread and a copy of the module): a failed run does not leave its
    state to the next, a deep recursion still has the big stack, and concurrent calls
    each get a thread."""
    m = fluxion.compile(
        "fn r(n: Int) -> Int { if n == 0 { 0 } else { 1 + r(n - 1) } }\n"
        "fn pick(xs: [Real], i: Int) -> Real { xs[i] * xs[i] }",
        backend="interp",
    )
    g = fluxion.grad(m.pick, ad="delta")
    xs = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(g(xs, 1), [0.0, 4.0, 0.0])
    with pytest.raises(fluxion.FluxionRuntimeError, match="index"):
        g(xs, 7)  # fails part-way through a reverse pass
    np.testing.assert_array_equal(g(xs, 2), [0.0, 0.0, 6.0])
    assert m.r(200_000) == 200_000 and m.r(3) == 3 and m.r(200_000) == 200_000
    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(m.r, [50_000] * 8)) == [50_000] * 8


def test_concurrent_first_calls_compile_once():
    m = fluxion.compile("fn f(x: Real) -> Real { sin(x) * x + 0.0314159 }", backend="native")
    before = fluxion._fluxion.native_compiles()
    with ThreadPoolExecutor(max_workers=8) as pool:
        assert len(set(pool.map(m.f, [1.0] * 8))) == 1
    assert fluxion._fluxion.native_compiles() == before + 1
