from ._fluxion import (
    Error as Error,
    FluxionArgumentError as FluxionArgumentError,
    FluxionInternalError as FluxionInternalError,
    FluxionRuntimeError as FluxionRuntimeError,
    FluxionSyntaxError as FluxionSyntaxError,
    FluxionTypeError as FluxionTypeError,
    FluxionUnsupportedError as FluxionUnsupportedError,
    Function as Function,
    Module as Module,
    compile as compile,
    load as load,
)
from ._transforms import (
    grad as grad,
    hessian as hessian,
    jacobian as jacobian,
    jvp as jvp,
    taylor as taylor,
    jet as jet,
    value_and_grad as value_and_grad,
    vjp as vjp,
)
from ._variant import Variant as Variant
