"""Fluxion from Python: compile a Fluxion program, call its functions with NumPy
arrays, and differentiate them with JAX's vocabulary.

>>> import fluxion, numpy as np
>>> m = fluxion.compile("fn f(x: [Real]) -> Real { sum(map(|a| a * a, x)) }")
>>> m.f(np.array([1.0, 2.0]))
5.0
>>> fluxion.grad(m.f)(np.array([1.0, 2.0]))
array([2., 4.])

Types convert as follows: ``Real`` ⇄ float, ``Int`` ⇄ int, ``Bool`` ⇄ bool,
``()`` ⇄ None, tuples ⇄ tuples, ``[Real]``/``[Int]``/``[Bool]`` ⇄ 1-D NumPy arrays
(float64/int64/bool; lists are accepted too), ``[[Real]]`` ⇄ 2-D arrays (a list of
1-D arrays when ragged), other arrays ⇄ lists, enums ⇄ :class:`Variant`.
"""

from ._fluxion import (
    Error,
    FluxionArgumentError,
    FluxionInternalError,
    FluxionRuntimeError,
    FluxionSyntaxError,
    FluxionTypeError,
    FluxionUnsupportedError,
    Function,
    Module,
    compile,
    load,
)
from ._transforms import grad, hessian, jacobian, jet, jvp, taylor, value_and_grad, vjp, vmap
from ._variant import Variant

__all__ = [
    "Error",
    "FluxionArgumentError",
    "FluxionInternalError",
    "FluxionRuntimeError",
    "FluxionSyntaxError",
    "FluxionTypeError",
    "FluxionUnsupportedError",
    "Function",
    "Module",
    "Variant",
    "compile",
    "grad",
    "hessian",
    "jacobian",
    "jvp",
    "load",
    "taylor",
    "jet",
    "value_and_grad",
    "vjp",
    "vmap",
]
