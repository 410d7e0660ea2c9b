"""Fluxion functions inside JAX programs.

``fluxion.jax.function(m.f)`` returns a function JAX can ``jit``, ``grad``, ``jvp``,
``vmap`` and nest: its value comes from Fluxion through ``jax.pure_callback``, and its
derivatives from Fluxion's own operators. Its JVP rule is ``J(x)·t``, with the
Jacobian ``J`` made by Fluxion (``grad`` of a ``Real`` result: one reverse pass; one
pullback per output of an array result) and itself lifted the same way, lazily, so the
tangent is a linear JAX expression that JAX can transpose (``jax.grad``) and
differentiate again (Hessians). A callback has no transpose of its own, which is why
the rule is not a callback of Fluxion's ``jvp``.

Parameters take ``Real``, ``Int``, ``[Real]`` or ``[[Real]]`` values (JAX arrays of
rank 0, 1 or 2); the result is a ``Real`` or an array of reals (``[Real]``,
``[[Real]]``, ...). The Jacobian in an argument has the result's shape followed by the
argument's (made by Fluxion's ``grad`` for a ``Real`` result, and by one pullback per
output for an array), so derivatives of every order exist. Fluxion
computes in float64, so JAX must too: ``jax.config.update("jax_enable_x64", True)``.
The shape of the result is found by calling the function once on zeros of the
arguments' shapes (when it is first traced for those shapes); give ``result_shape``
where zeros are not a valid input or the result's shape depends on the arguments'
values (derivatives then need no call either; a result empty on zeros must be given,
and a result of another shape than the one found or given is an error). A Fluxion
error inside a JAX computation reaches the caller as JAX's error for a failed
callback, with Fluxion's diagnostic in its message. Needs JAX
(``pip install ./crates/fluxion-py[jax]``).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from ._fluxion import FluxionArgumentError, FluxionUnsupportedError, Function

__all__ = ["function"]


def function(f: Function, *, result_shape: Any = None) -> Callable[..., Any]:
    """``f`` as a JAX function (see the module's documentation). ``result_shape``: the
    shape of the result, a tuple of ints (``()`` for a ``Real``) or anything with a
    ``.shape``; by default it is found by calling ``f`` on zeros."""
    if not isinstance(f, Function):
        raise FluxionArgumentError(
            f"fluxion.jax.function expects a Fluxion function (m.f), found {type(f).__name__}"
        )
    if not jax.config.read("jax_enable_x64"):
        raise FluxionUnsupportedError(
            "fluxion.jax needs JAX in float64, as Fluxion computes: "
            'jax.config.update("jax_enable_x64", True)'
        )
    if result_shape is None:
        return _lift(f, None)
    fixed = tuple(getattr(result_shape, "shape", result_shape))
    return _lift(f, lambda args: fixed)


def _to_fluxion(x: np.ndarray) -> Any:
    """A callback's argument as the Fluxion call takes it: a number for rank 0."""
    x = np.asarray(x)
    return x.item() if x.ndim == 0 else x


def _lift(
    f: Function, shape_of: Callable[[tuple[Any, ...]], tuple[int, ...]] | None
) -> Callable[..., Any]:
    """`f` lifted; `shape_of(args)` gives its result's shape (`None`: by a call on zeros,
    once per argument shapes)."""
    n = len(f.parameters)
    probed: dict[Any, tuple[int, ...]] = {}
    derivatives: dict[int, Callable[..., Any]] = {}

    def host(expected: tuple[int, ...] | None, *xs: np.ndarray) -> np.ndarray:
        y = np.asarray(f(*[_to_fluxion(x) for x in xs]), dtype=np.float64)
        # JAX does not check an empty declared result: a value-dependent shape would
        # otherwise come back as the probe's, silently.
        if expected is not None and y.shape != expected:
            raise FluxionArgumentError(
                f"`{f.name}` gave a result of shape {y.shape} where {expected} was "
                "expected (its shape on zeros of the arguments' shapes, or result_shape): "
                "a result whose shape depends on the arguments' values needs "
                "result_shape=... matching it"
            )
        return y

    def out_shape(args: tuple[Any, ...]) -> tuple[int, ...]:
        if shape_of is not None:
            return tuple(shape_of(args))
        key = tuple((tuple(jnp.shape(a)), str(jnp.result_type(a))) for a in args)
        if key not in probed:
            zeros = [np.zeros(jnp.shape(a), jnp.result_type(a)) for a in args]
            shape = host(None, *zeros).shape
            # JAX never runs a callback whose declared result is empty, so an empty
            # result on zeros cannot be checked against the real one: it must be said.
            if 0 in shape:
                raise FluxionArgumentError(
                    f"`{f.name}` gives an empty result (shape {shape}) on zeros of the "
                    "arguments' shapes; if that is its shape for every argument, say so "
                    "with result_shape=..., which JAX needs where it depends on values"
                )
            probed[key] = shape
        return probed[key]

    def derivative(i: int, scalar: bool) -> Callable[..., Any]:
        """The Jacobian of `f` in argument `i` (shape: the result's, then argument
        `i`'s), lifted, made on first use: Fluxion's `grad` for a `Real` result, its
        rows by pullbacks for a `[Real]` one."""
        if i not in derivatives:
            d = f.derive("grad" if scalar else "jacobian_rows", [i])
            derivatives[i] = _lift(d, lambda args: out_shape(args) + tuple(jnp.shape(args[i])))
        return derivatives[i]

    @jax.custom_jvp
    def lifted(*args: Any) -> Any:
        if len(args) != n:
            raise FluxionArgumentError(f"`{f.name}` takes {n} argument(s), {len(args)} given")
        args = tuple(jnp.asarray(a) for a in args)
        shape = out_shape(args)
        out = jax.ShapeDtypeStruct(shape, jnp.float64)
        return jax.pure_callback(
            functools.partial(host, shape), out, *args, vmap_method="sequential"
        )

    def rule(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
        y = lifted(*primals)
        t_out = jnp.zeros_like(y)
        for i, (x, t) in enumerate(zip(primals, tangents)):
            if isinstance(t, jax.custom_derivatives.SymbolicZero):
                continue
            if not jnp.issubdtype(jnp.result_type(x), jnp.floating):
                continue
            j = derivative(i, y.ndim == 0)(*primals)
            t_out = t_out + jnp.tensordot(j, t, axes=jnp.ndim(t))
        return y, t_out

    lifted.defjvp(rule, symbolic_zeros=True)
    lifted.__name__ = f.name
    lifted.__doc__ = f"{f.name} as a JAX function: {f.signature}"
    return lifted
