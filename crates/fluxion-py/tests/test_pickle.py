"""Modules, functions and transformed functions pickle (by source, AD mode and
backend; rebuilt once per process on arrival), so a process pool can run them."""

import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor

import numpy as np

import fluxion

W = np.array([0.3, -1.2, 0.7, 2.0])
S = 1.7


def test_modules_and_functions_round_trip(m):
    m2 = pickle.loads(pickle.dumps(m))
    assert m2.source == m.source and m2.backend == m.backend
    assert m2.loss(W, S) == m.loss(W, S)
    batch = (np.stack([W, 2.0 * W]), S)
    for f, args in (
        (m.loss, (W, S)),
        (m.loss.with_ad("chad").with_backend("interp"), (W, S)),
        (fluxion.grad(m.loss), (W, S)),
        (fluxion.grad(fluxion.grad(m.scalar)), (0.7,)),
        (fluxion.grad(m.loss, argnums=(1,)), (W, S)),
        (fluxion.vmap(fluxion.grad(m.loss), in_axes=(0, None)), batch),
    ):
        g = pickle.loads(pickle.dumps(f))
        a, b = f(*args), g(*args)
        if isinstance(a, tuple):
            a, b = a[0], b[0]
        np.testing.assert_array_equal(a, b)
    g = pickle.loads(pickle.dumps(m.loss.with_ad("chad").with_backend("interp")))
    assert (g.ad, g.backend) == ("chad", "interp")


def test_a_process_pool_runs_a_gradient_over_chunks(m):
    g = fluxion.grad(m.loss)
    chunks = [W * k for k in range(1, 7)]
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
        remote = list(pool.map(g, chunks, [S] * len(chunks)))
    for c, r in zip(chunks, remote):
        np.testing.assert_array_equal(r, g(c, S))
