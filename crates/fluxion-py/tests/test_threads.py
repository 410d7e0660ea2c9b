"""Calls release the GIL and share nothing mutable: threads may call at once."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np

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
