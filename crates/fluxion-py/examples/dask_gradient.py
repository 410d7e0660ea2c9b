"""Fan a gradient over data chunks with Dask's local cluster: the logistic regression
loss of logistic.flx over a data set split into row chunks, each chunk's gradient
computed on a worker process (the transformed function travels pickled, by its
source, and is compiled once per worker), the chunks' gradients summed, weighted by
their share of the rows.

    pip install "dask[distributed]"
    python dask_gradient.py
"""

from pathlib import Path

import numpy as np

import fluxion

HERE = Path(__file__).parent


def make_data(n=20000, d=8, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = (rng.random(n) < 1 / (1 + np.exp(-x[:, 0]))).astype(np.float64)
    return x, y


def chunked_gradient(client, w, x, y, l2, chunks=8):
    """The gradient of `loss(w, x, y, l2)`: the mean over rows is the row-weighted mean
    of the chunks' means, and the penalty's gradient, 2·l2·w, is added once."""
    m = fluxion.load(HERE / "logistic.flx")
    grad = fluxion.grad(m.loss)
    xs, ys = np.array_split(x, chunks), np.array_split(y, chunks)
    parts = client.map(grad, [w] * chunks, xs, ys, [0.0] * chunks)
    total = sum(len(c) / len(x) * g for c, g in zip(xs, client.gather(parts)))
    return total + 2 * l2 * w


def main():
    from dask.distributed import Client, LocalCluster

    x, y = make_data()
    w = np.linspace(-0.5, 0.5, x.shape[1] + 1)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster:
        with Client(cluster) as client:
            g = chunked_gradient(client, w, x, y, l2=1e-3)
    whole = fluxion.grad(fluxion.load(HERE / "logistic.flx").loss)(w, x, y, 1e-3)
    print("gradient over 8 chunks on 2 workers:", np.round(g, 6))
    print("largest difference from one call on all the data:", np.max(np.abs(g - whole)))
    return g, whole


if __name__ == "__main__":
    main()
