import numpy as np
import pytest

import fluxion

SOURCE = """
enum Shape { Circle(Real), Rect(Real, Real) }
enum List { Nil, Cons(Real, List) }

fn area(s: Shape) -> Real {
    match s { Circle(r) => 3.0 * r * r, Rect(w, h) => w * h }
}
fn total(l: List) -> Real { match l { Nil => 0.0, Cons(x, rest) => x + total(rest) } }
fn shapes(r: Real) -> [Shape] { [Circle(r), Rect(r, 2.0)] }
fn ident_real(x: Real) -> Real { x }
fn ident_int(x: Int) -> Int { x }
fn ident_bool(x: Bool) -> Bool { x }
fn ident_unit(x: ()) -> () { x }
fn ident_tuple(x: (Real, (Int, Bool))) -> (Real, (Int, Bool)) { x }
fn ident_reals(x: [Real]) -> [Real] { x }
fn ident_ints(x: [Int]) -> [Int] { x }
fn ident_bools(x: [Bool]) -> [Bool] { x }
fn ident_matrix(x: [[Real]]) -> [[Real]] { x }
fn ident_int_matrix(x: [[Int]]) -> [[Int]] { x }
fn ident_cube(x: [[[Real]]]) -> [[[Real]]] { x }
fn ident_pairs(x: [(Real, Int)]) -> [(Real, Int)] { x }
fn ident_shape(s: Shape) -> Shape { s }
fn ident_list(l: List) -> List { l }
fn ragged() -> [[Real]] { [[1.0], [2.0, 3.0]] }
fn empty() -> [Real] { build(0, |i| to_real(i)) }

fn loss(w: [Real], scale: Real) -> Real {
    scale * sum(map(|a| sin(a) * a * a, w)) + log(1.0 + w[0] * w[0])
}
fn vecfn(x: [Real]) -> [Real] { [x[0] * x[1], sin(x[0]) + exp(x[1])] }
fn scalar(x: Real) -> Real { x * x * x + sin(x) }
fn pair(x: Real, n: Int) -> Real { x * to_real(n) + cos(x) }
fn boom(x: [Real]) -> Real { x[10] }
fn f_returns_fn(x: Real) -> fn(Real) -> Real { |y| x + y }
"""


@pytest.fixture(scope="session")
def m():
    return fluxion.compile(SOURCE, name="test.flx")


# Central differences: error ≈ h²·|f'''|/6 + ε·|f|/h; with h = 1e-5 and values and
# derivatives of order 1-10 here, that is about 1e-9 + 1e-10, so 1e-6 (relative to
# the size of the derivative, absolute near 0) leaves a wide margin without hiding a
# wrong derivative (which would be off by O(1)).
H = 1e-5
TOL = 1e-6


def central_grad(f, x):
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = H
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * H)
    return g


def central_jacobian(f, x):
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = H
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * H))
    return np.stack(cols, axis=1)


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)
