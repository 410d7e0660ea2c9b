"""Every type both ways, and wrong values as clear fluxion errors."""

import numpy as np
import pytest

import fluxion


def test_scalars_round_trip(m):
    assert m.ident_real(1.5) == 1.5 and type(m.ident_real(1.5)) is float
    assert m.ident_real(2) == 2.0  # an int is accepted where a Real is expected
    assert m.ident_real(np.float64(0.25)) == 0.25
    assert m.ident_int(-(2**63)) == -(2**63) and type(m.ident_int(3)) is int
    assert m.ident_int(np.int64(7)) == 7
    assert m.ident_bool(True) is True and m.ident_bool(np.bool_(False)) is False
    assert m.ident_unit(None) is None
    assert np.isnan(m.ident_real(float("nan"))) and m.ident_real(float("inf")) == float("inf")


def test_tuples_and_lists(m):
    assert m.ident_tuple((1.5, (2, True))) == (1.5, (2, True))
    assert m.ident_tuple([1.5, [2, True]]) == (1.5, (2, True))
    assert m.ident_pairs([(1.0, 2), (3.0, 4)]) == [(1.0, 2), (3.0, 4)]


def test_numeric_arrays_are_numpy_both_ways(m):
    x = np.linspace(0, 1, 7)
    out = m.ident_reals(x)
    assert out.dtype == np.float64 and out.shape == (7,)
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(m.ident_reals([1.0, 2.0]), [1.0, 2.0])
    ints = m.ident_ints(np.array([1, -2, 2**62], dtype=np.int64))
    assert ints.dtype == np.int64 and list(ints) == [1, -2, 2**62]
    bools = m.ident_bools(np.array([True, False]))
    assert bools.dtype == np.bool_ and list(bools) == [True, False]
    # Strided views are read with one copy, too.
    np.testing.assert_array_equal(m.ident_reals(np.arange(10.0)[::3]), [0.0, 3.0, 6.0, 9.0])


def test_matrices(m):
    a = np.arange(12.0).reshape(3, 4)
    out = m.ident_matrix(a)
    assert out.dtype == np.float64 and out.shape == (3, 4)
    np.testing.assert_array_equal(out, a)
    np.testing.assert_array_equal(m.ident_matrix(a.T), a.T)  # Fortran order
    np.testing.assert_array_equal(m.ident_matrix([[1.0, 2.0], [3.0, 4.0]]), [[1, 2], [3, 4]])
    ints = m.ident_int_matrix(np.arange(6).reshape(2, 3))
    assert ints.dtype == np.int64 and ints.shape == (2, 3)
    cube = np.arange(24.0).reshape(2, 3, 4)
    out = m.ident_cube(cube)
    assert isinstance(out, list) and len(out) == 2
    np.testing.assert_array_equal(np.stack(out), cube)
    ragged = m.ragged()
    assert isinstance(ragged, list) and [list(r) for r in ragged] == [[1.0], [2.0, 3.0]]
    empty = m.empty()
    assert empty.dtype == np.float64 and empty.shape == (0,)


def test_enums(m):
    shapes = m.shapes(1.5)
    assert shapes == [fluxion.Variant("Circle", 1.5), fluxion.Variant("Rect", 1.5, 2.0)]
    assert shapes[0].enum == "Shape" and repr(shapes[1]) == "Rect(1.5, 2.0)"
    assert m.area(m.Circle(2.0)) == 12.0
    assert m.area({"Rect": [2.0, 3.0]}) == 6.0
    assert m.ident_shape(shapes[1]) == shapes[1]
    lst = m.Cons(1.0, m.Cons(2.0, "Nil"))
    assert m.total(lst) == 3.0
    assert m.total({"Cons": [1.0, {"Nil": []}]}) == 1.0


@pytest.mark.parametrize(
    "call, fragment",
    [
        (lambda m: m.ident_reals(np.ones(3, dtype=np.float32)), "dtype float64"),
        (lambda m: m.ident_reals(np.ones(3, dtype=np.int64)), "dtype float64"),
        (lambda m: m.ident_ints(np.ones(3)), "dtype int64"),
        (lambda m: m.ident_reals(np.ones((2, 2))), "expected a 1-D array"),
        (lambda m: m.ident_matrix(np.ones(3)), "2-D array"),
        (lambda m: m.ident_matrix([[1.0], 2.0]), "x[1]"),
        (lambda m: m.ident_real("1.0"), "expected a float"),
        (lambda m: m.ident_real(True), "expected a float"),
        (lambda m: m.ident_int(1.5), "expected an int"),
        (lambda m: m.ident_int(2**70), "64-bit"),
        (lambda m: m.ident_unit(0), "expected None"),
        (lambda m: m.ident_tuple((1.0, 2)), "x[1]"),
        (lambda m: m.ident_tuple((1.0,)), "tuple of 2"),
        (lambda m: m.area("Square"), "not a constructor of Shape"),
        (lambda m: m.area({"Rect": [1.0]}), "has 2 field(s)"),
        (lambda m: m.area(3), "fluxion.Variant"),
        (lambda m: m.ident_real(), "takes 1 argument"),
        (lambda m: m.ident_real(1.0, 2.0), "takes 1 argument"),
        (lambda m: m.ident_real(y=1.0), "no parameter `y`"),
        (lambda m: m.f_returns_fn(1.0), "cannot be returned to Python"),
    ],
)
def test_wrong_values_are_argument_errors(m, call, fragment):
    with pytest.raises(fluxion.FluxionArgumentError) as e:
        call(m)
    assert fragment in str(e.value)
    assert isinstance(e.value, fluxion.Error)


def nested_list(depth, last_head):
    lst = {"Cons": [last_head, "Nil"]}
    for _ in range(depth - 1):
        lst = {"Cons": [1.0, lst]}
    return lst


def test_deep_values_convert_both_ways(m):
    # 200 000 levels: a path spelt at every level (as once) is 10^11 characters of
    # formatting; converting level by level on one stack is 200 000 frames.
    depth = 200_000
    out, length = m.ident_list(nested_list(depth, 1.0)), 0
    while out.name == "Cons":
        out, length = out.fields[1], length + 1
    assert length == depth
    with pytest.raises(fluxion.FluxionArgumentError) as e:
        m.total(nested_list(depth, "one"))
    # The path is shown by its ends: `l.Cons[1]` eight times, the levels between
    # counted, then the last eight steps down to the string (`.Cons[0]`).
    message = str(e.value)
    assert f"({depth - 16} levels)" in message and message.count(".Cons[1]") == 15
    assert len(message) < 400


def test_keyword_arguments(m):
    assert m.pair(n=2, x=0.0) == 1.0


def test_large_array_is_one_buffer(m):
    # 10^7 elements: converting per element would take seconds and ~300 MB of Python
    # floats; a buffer copy takes milliseconds (timed in BENCHMARKS.md, not here).
    big = np.random.default_rng(0).random(10_000_000)
    out = m.ident_reals(big)
    assert out.shape == big.shape and out[123456] == big[123456]


def test_contiguous_arrays_are_read_in_place_by_native_code():
    """A C-contiguous float64/int64 array reaches native code as its address (two words
    of the argument stream: its length and where it is), whatever its size; native code
    copies it once into its own array. Anything else is copied into the stream."""
    m = fluxion.compile(
        "fn first(x: [Real]) -> Real { x[0] + x[length(x) - 1] }\n"
        "fn corner(x: [[Real]]) -> Real { x[0][0] + x[length(x) - 1][1] }\n"
        "fn last(x: [Int]) -> Int { x[length(x) - 1] }\n"
        "fn negated(x: [Real]) -> [Real] { map(|a| -a, x) }",
        backend="native",
    )
    words = fluxion._fluxion.argument_words
    big = np.arange(10.0**6)
    assert m.first(big) == 999999.0 and words() == 2
    assert m.last(np.arange(5 * 10**5)) == 5 * 10**5 - 1 and words() == 2
    a = np.arange(3000.0).reshape(1000, 3)
    assert m.corner(a) == 2998.0 and words() == 1 + 2 * 1000  # each row in place
    # Copied into the stream, element by element: a strided view, a Fortran-order
    # matrix, a list.
    assert m.first(big[::2]) == 999998.0 and words() == 1 + 500000
    assert m.corner(np.asfortranarray(a)) == 2998.0 and words() == 1 + 4 * 1000
    assert m.first([1.0, 2.0, 4.0]) == 5.0 and words() == 1 + 3
    # Read, never written or kept: the result is a new array, the input unchanged.
    x = np.linspace(-1.0, 1.0, 11)
    before = x.copy()
    out = m.negated(x)
    out[0] = 42.0
    np.testing.assert_array_equal(x, before)
    np.testing.assert_array_equal(m.negated(x), -before)
