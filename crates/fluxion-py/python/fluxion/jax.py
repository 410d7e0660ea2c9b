"""Fluxion functions inside JAX programs.

``fluxion.jax.function(m.f)`` returns a function JAX can ``jit``, ``grad``, ``jvp``,
``vmap`` and nest: its value comes from Fluxion through ``jax.pure_callback``, and its
derivatives from Fluxion's own operators. Its JVP rule is ``J(x)·t``, with the
Jacobian ``J`` made by Fluxion (``grad`` of a ``Real`` result: one reverse pass;
``jacobian`` of a ``[Real]`` result) and itself lifted the same way, lazily, so the
tangent is a linear JAX expression that JAX can transpose (``jax.grad``) and
differentiate again (Hessians). A callback has no transpose of its own, which is why
the rule is not a callback of Fluxion's ``jvp``.

Parameters take ``Real``, ``Int``, ``[Real]`` or ``[[Real]]`` values (JAX arrays of
rank 0, 1 or 2); the result is a ``Real`` or a ``[Real]``. Fluxion computes in
float64, so JAX must too: ``jax.config.update("jax_enable_x64", True)``. The shape of
the result is found by calling the function once on zeros of the arguments' shapes
(when it is first traced for those shapes); give ``result_shape`` where zeros are
not a valid input. Needs JAX (``pip install ./crates/fluxion-py[jax]``).
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from . import _transforms
from ._fluxion import FluxionArgumentError, FluxionUnsupportedError, Function

__all__ = ["function"]


def function(f: Function, *, result_shape: tuple[int, ...] | None = None) -> Callable[..., Any]:
    """``f`` as a JAX function (see the module's documentation)."""
    if not isinstance(f, Function):
        raise FluxionArgumentError(
            f"fluxion.jax.function expects a Fluxion function (m.f), found {type(f).__name__}"
        )
    if not jax.config.read("jax_enable_x64"):
        raise FluxionUnsupportedError(
            "fluxion.jax needs JAX in float64, as Fluxion computes: "
            'jax.config.update("jax_enable_x64", True)'
        )
    return _lift(f, result_shape)


def _to_fluxion(x: np.ndarray) -> Any:
    """A callback's argument as the Fluxion call takes it: a number for rank 0."""
    x = np.asarray(x)
    return x.item() if x.ndim == 0 else x


def _lift(f: Function, result_shape: tuple[int, ...] | None) -> Callable[..., Any]:
    n = len(f.parameters)
    shapes: dict[Any, jax.ShapeDtypeStruct] = {}
    derivatives: dict[int, Callable[..., Any]] = {}

    def host(*xs: np.ndarray) -> np.ndarray:
        return np.asarray(f(*[_to_fluxion(x) for x in xs]), dtype=np.float64)

    def out_struct(args: tuple[Any, ...]) -> jax.ShapeDtypeStruct:
        if result_shape is not None:
            return jax.ShapeDtypeStruct(tuple(result_shape), jnp.float64)
        key = tuple((tuple(a.shape), str(a.dtype)) for a in args)
        if key not in shapes:
            zeros = [np.zeros(a.shape, a.dtype) for a in args]
            shapes[key] = jax.ShapeDtypeStruct(host(*zeros).shape, jnp.float64)
        return shapes[key]

    def derivative(i: int, scalar: bool) -> Callable[..., Any]:
        """The Jacobian of `f` in argument `i`, lifted (made on first use)."""
        if i not in derivatives:
            d = _transforms.grad(f, argnums=i) if scalar else _transforms.jacobian(f, argnums=i)
            derivatives[i] = _lift(d, None)
        return derivatives[i]

    @jax.custom_jvp
    def lifted(*args: Any) -> Any:
        if len(args) != n:
            raise FluxionArgumentError(f"`{f.name}` takes {n} argument(s), {len(args)} given")
        args = tuple(jnp.asarray(a) for a in args)
        return jax.pure_callback(host, out_struct(args), *args, vmap_method="sequential")

    def rule(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
        y = lifted(*primals)
        scalar = y.ndim == 0
        t_out = jnp.zeros_like(y)
        for i, (x, t) in enumerate(zip(primals, tangents)):
            if isinstance(t, jax.custom_derivatives.SymbolicZero):
                continue
            if not jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating):
                continue
            if not scalar and jnp.ndim(x) != 1:
                raise FluxionUnsupportedError(
                    f"fluxion.jax: the derivative of `{f.name}` ([Real] result) in an "
                    "argument that is not a [Real]"
                )
            j = derivative(i, scalar)(*primals)
            t_out = t_out + (jnp.sum(j * t) if scalar else j @ t)
        return y, t_out

    lifted.defjvp(rule, symbolic_zeros=True)
    lifted.__name__ = f.name
    lifted.__doc__ = f"{f.name} as a JAX function: {f.signature}"
    return lifted
