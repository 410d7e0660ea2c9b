"""JAX-style transformations of Fluxion functions.

Each transformation generates a small Fluxion function around the user's one, in the
module's source, and compiles it (``fluxion.grad(m.f, argnums=1)`` is
``fn __fx_grad_f(x: A, w: B) -> T(B) { grad(|w: B| f(x, w), w) }``), so the
derivative is computed by Fluxion's own operator, in the chosen AD mode, and a derived
function can be transformed again (``grad(grad(m.f))``).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ._fluxion import FluxionArgumentError, Function

ArgNums = int | Sequence[int]

BACKENDS = ("native", "interp")
"""The backends: machine code through the system C compiler (the default where one is
present), and the interpreter."""


def _prepare(f: Any, ad: str | None, backend: str | None) -> Function:
    if not isinstance(f, Function):
        raise FluxionArgumentError(
            f"expected a Fluxion function (m.f from fluxion.compile or fluxion.load), "
            f"found {type(f).__name__}"
        )
    if backend is not None:
        if backend not in BACKENDS:
            raise FluxionArgumentError(
                f"unknown backend {backend!r} (the backends: native, interp)"
            )
        f = f.with_backend(backend)
    return f if ad is None else f.with_ad(ad)


def _argnums(f: Function, argnums: ArgNums | None) -> tuple[list[int], bool]:
    """The differentiated parameters, and whether the caller asked for a tuple."""
    n = len(f.parameters)
    if argnums is None:
        return list(range(n)), True
    if isinstance(argnums, int):
        return [_index(argnums, n)], False
    return [_index(i, n) for i in argnums], True


def _index(i: int, n: int) -> int:
    if not isinstance(i, int) or isinstance(i, bool):
        raise FluxionArgumentError(f"argnums must be ints, found {i!r}")
    if not -n <= i < n:
        raise FluxionArgumentError(
            f"argnums {i} is out of range for a function of {n} parameter(s)"
        )
    return i + n if i < 0 else i


def _single(nums: list[int], tupled: bool) -> bool:
    """Whether the wrapper's result must be put into a 1-tuple for the caller."""
    return tupled and len(nums) == 1


def grad(
    f: Function, argnums: ArgNums = 0, *, ad: str | None = None, backend: str | None = None
) -> Callable[..., Any]:
    """The gradient of ``f`` (which returns a ``Real``) with respect to argument
    ``argnums``: a function with ``f``'s parameters returning ``T(A)`` (a float64
    array for ``[Real]``). With a tuple of argnums it returns a tuple of gradients.

    ``ad`` picks the algorithm (``"delta"``, reverse mode by dual numbers with deltas,
    the default; ``"chad"``, reverse CHAD; ``"fwd"``, one forward pass per input)."""
    f = _prepare(f, ad, backend)
    nums, tupled = _argnums(f, argnums)
    g = f.derive("grad", nums)
    if _single(nums, tupled):
        return _Post(g, _one_tuple)
    return g


def value_and_grad(
    f: Function, argnums: ArgNums = 0, *, ad: str | None = None, backend: str | None = None
) -> Callable[..., Any]:
    """Like :func:`grad`, returning ``(f(*args), gradient)``."""
    f = _prepare(f, ad, backend)
    nums, tupled = _argnums(f, argnums)
    g = f.derive("value_and_grad", nums)
    if _single(nums, tupled):
        return _Post(g, _value_and_one_tuple)
    return g


def jacobian(
    f: Function, argnums: int = 0, *, ad: str | None = None, backend: str | None = None
) -> Callable[..., Any]:
    """The Jacobian of ``f`` (``[Real] -> [Real]`` in argument ``argnums``) as a
    2-D float64 array: row ``i`` is the gradient of output ``i``."""
    f = _prepare(f, ad, backend)
    nums, _ = _argnums(f, argnums)
    return f.derive("jacobian", nums)


def hessian(
    f: Function, argnums: int = 0, *, ad: str | None = None, backend: str | None = None
) -> Callable[..., Any]:
    """The Hessian of ``f`` (``[Real] -> Real`` in argument ``argnums``) as a 2-D
    float64 array."""
    f = _prepare(f, ad, backend)
    nums, _ = _argnums(f, argnums)
    return f.derive("hessian", nums)


def jvp(
    f: Function,
    primals: Sequence[Any],
    tangents: Sequence[Any],
    *,
    argnums: ArgNums | None = None,
    ad: str | None = None,
    backend: str | None = None,
) -> tuple[Any, Any]:
    """``(f(*primals), J·tangents)``, as ``jax.jvp``: ``primals`` has one value per
    parameter; ``tangents`` one per differentiated parameter (all of them unless
    ``argnums`` says otherwise), each of the parameter's tangent type (``None`` for
    an ``Int``, ``Bool`` or ``()``)."""
    f = _prepare(f, ad, backend)
    nums, _ = _argnums(f, argnums)
    primals, tangents = tuple(primals), tuple(tangents)
    if len(tangents) != len(nums):
        raise FluxionArgumentError(
            f"jvp: {len(nums)} tangent(s) expected (one per differentiated argument), "
            f"{len(tangents)} given"
        )
    g = f.derive("jvp", nums)
    return tuple(g(*primals, tangents[0] if len(nums) == 1 else tangents))


def vjp(
    f: Function,
    *primals: Any,
    argnums: ArgNums | None = None,
    ad: str | None = None,
    backend: str | None = None,
) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    """``(f(*primals), pullback)``, as ``jax.vjp``: ``pullback(cotangent)`` returns a
    tuple with one cotangent per differentiated parameter (all of them unless
    ``argnums`` says otherwise). Each pullback call runs Fluxion's ``vjp`` again at
    the same point (values do not outlive a call)."""
    f = _prepare(f, ad, backend)
    nums, _ = _argnums(f, argnums)
    value = f(*primals)
    pb = f.derive("vjp", nums)

    def pullback(cotangent: Any) -> tuple[Any, ...]:
        r = pb(*primals, cotangent)
        return (r,) if len(nums) == 1 else tuple(r)

    pullback.__doc__ = f"The pullback of {f.name} at the given point."
    return value, pullback


def taylor(
    f: Function,
    primals: Sequence[Any],
    directions: Sequence[Any],
    order: int,
    *,
    argnums: ArgNums | None = None,
    ad: str | None = None,
    backend: str | None = None,
) -> tuple[Any, Any]:
    """``(f(x), [c_1, ..., c_order])`` with ``c_j = (1/j!) dʲ/dtʲ f(x + t·v)`` at
    ``t = 0`` (Fluxion's ``taylor``, Taylor mode): ``primals`` and ``directions`` as
    in :func:`jvp`. For a ``Real`` result the coefficients are a float64 array."""
    f = _prepare(f, ad, backend)
    nums, _ = _argnums(f, argnums)
    primals, directions = tuple(primals), tuple(directions)
    if len(directions) != len(nums):
        raise FluxionArgumentError(
            f"taylor: {len(nums)} direction(s) expected, {len(directions)} given"
        )
    if not isinstance(order, int) or isinstance(order, bool):
        raise FluxionArgumentError(f"taylor: the order must be an int, found {order!r}")
    g = f.derive("taylor", nums, order)
    return tuple(g(*primals, directions[0] if len(nums) == 1 else directions))


def jet(
    f: Function,
    primals: Sequence[Any],
    directions: Sequence[Any],
    order: int,
    *,
    argnums: ArgNums | None = None,
    ad: str | None = None,
    backend: str | None = None,
) -> tuple[Any, Any]:
    """``(f(x), partials)``: every mixed partial ``∂^α f(x + Σⱼ tⱼ·vⱼ)`` at ``t = 0``
    with ``1 ≤ |α| ≤ order`` along the k ``directions`` (Fluxion's ``jet``, [Taylor]'s
    ``D_(k,R)``), in graded order — by ``|α|``, then the first direction's exponent
    largest first — and not divided by factorials. Each direction is as the tangents of
    :func:`jvp` (one per differentiated argument; a tuple for several)."""
    f = _prepare(f, ad, backend)
    nums, _ = _argnums(f, argnums)
    primals, directions = tuple(primals), list(directions)
    if not directions:
        raise FluxionArgumentError("jet: at least one direction is needed")
    if not isinstance(order, int) or isinstance(order, bool):
        raise FluxionArgumentError(f"jet: the order must be an int, found {order!r}")
    g = f.derive("jet", nums, order)
    return tuple(g(*primals, directions))


def vmap(f: Function, in_axes: int | None | Sequence[int | None] = 0) -> Callable[..., Any]:
    """``f`` mapped over the leading axis of its arguments, as ``jax.vmap``: ``in_axes``
    is ``0`` (every argument batched) or one entry per argument, ``0`` (batched: an
    array, or a sequence, of the parameter's values) or ``None`` (passed whole to
    every call). The map runs in Fluxion (one ``build``: natively, one compiled loop),
    and ``f`` may be a transformed function (``vmap(grad(m.loss), in_axes=(0, None))``).
    Results are stacked as JAX stacks them: reals into a float64 array, arrays of one
    shape into an array with a leading axis, tuples component by component. Arguments
    are positional."""
    f = _prepare(f, None, None)
    n = len(f.parameters)
    if in_axes is None or isinstance(in_axes, int):
        axes = [in_axes] * n
    else:
        axes = list(in_axes)
        if len(axes) != n:
            raise FluxionArgumentError(
                f"vmap: in_axes has {len(axes)} entries, `{f.name}` takes {n} argument(s)"
            )
    for a in axes:
        if a is not None and (not isinstance(a, int) or isinstance(a, bool)):
            raise FluxionArgumentError(f"vmap: in_axes entries must be 0 or None, found {a!r}")
        if a not in (0, None):
            raise FluxionArgumentError(
                f"vmap: only the leading axis can be mapped (in_axes 0 or None), found {a}"
            )
    batched = [i for i, a in enumerate(axes) if a == 0]
    if not batched:
        raise FluxionArgumentError("vmap: in_axes maps no argument")
    return _Vmapped(f.derive("vmap", batched), n, batched)


class _Vmapped:
    """A function made by :func:`vmap`: checks the mapped arguments' lengths and stacks
    the results. A class (not a closure), so it pickles."""

    def __init__(self, g: Function, n: int, batched: list[int]) -> None:
        self.g, self.n, self.batched = g, n, batched
        self.__name__ = g.name
        self.__doc__ = f"{g.name}: {g.signature}"
        self.__wrapped__ = g

    def __call__(self, *args: Any) -> Any:
        if len(args) == self.n:
            for i in self.batched:
                if not hasattr(args[i], "__len__"):
                    raise FluxionArgumentError(
                        f"vmap: argument {i} is mapped (in_axes 0) but is not an array or "
                        f"a sequence: {type(args[i]).__name__}"
                    )
            sizes = sorted({len(args[i]) for i in self.batched})
            if len(sizes) > 1:
                raise FluxionArgumentError(
                    f"vmap: the mapped arguments have different lengths {sizes}"
                )
        return _stack(self.g(*args))


def _stack(r: Any) -> Any:
    """A batch of results as JAX stacks it: a list of tuples as a tuple of stacks, a
    list of same-shaped arrays as one array; anything else as it is."""
    if not isinstance(r, list) or not r:
        return r
    if all(isinstance(e, tuple) for e in r):
        return tuple(_stack(list(col)) for col in zip(*r))
    if all(isinstance(e, np.ndarray) and e.shape == r[0].shape for e in r):
        return np.stack(r)
    if all(isinstance(e, (float, int, bool)) for e in r):
        return np.asarray(r)
    return r


def _one_tuple(r: Any) -> Any:
    return (r,)


def _value_and_one_tuple(r: Any) -> Any:
    return (r[0], (r[1],))


class _Post:
    """A transformed function whose result is reshaped for the caller (a gradient with
    ``argnums=(i,)`` is a 1-tuple). A class with a module-level ``post``, so it
    pickles."""

    def __init__(self, g: Function, post: Callable[[Any], Any]) -> None:
        self.g, self.post = g, post
        self.__name__ = g.name
        self.__doc__ = f"{g.name}: {g.signature}"
        self.__wrapped__ = g

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.post(self.g(*args, **kwargs))
