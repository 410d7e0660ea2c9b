"""Errors are exceptions with the rendered diagnostic and its position."""

import pytest

import fluxion


def test_syntax_error_has_position():
    with pytest.raises(fluxion.FluxionSyntaxError) as e:
        fluxion.compile("fn f(x: Real) -> Real {\n  x +\n}", name="bad.flx")
    err = e.value
    assert (err.file, err.line) == ("bad.flx", 3)
    assert str(err).startswith("bad.flx:3:") and "syntax error" in str(err)
    assert err.message and isinstance(err.column, int)


def test_type_error_has_position():
    with pytest.raises(fluxion.FluxionTypeError) as e:
        fluxion.compile("fn f(x: Real) -> Real { x + 1 }")
    assert (e.value.line, e.value.column) == (1, 25)
    assert "to_real" in str(e.value)


def test_runtime_error_has_position(m):
    with pytest.raises(fluxion.FluxionRuntimeError) as e:
        m.boom([1.0, 2.0])
    assert e.value.file == "test.flx" and "index 10 out of range" in str(e.value)


def test_load_reads_files(tmp_path):
    p = tmp_path / "sq.flx"
    p.write_text("fn sq(x: Real) -> Real { x * x }\n")
    assert fluxion.load(p).sq(3.0) == 9.0
    assert fluxion.load(str(p)).sq(2.0) == 4.0
    with pytest.raises(FileNotFoundError):
        fluxion.load(tmp_path / "missing.flx")


def test_names_do_not_shadow_builtins():
    assert fluxion.FluxionTypeError is not TypeError
    assert not hasattr(fluxion, "SyntaxError") and not hasattr(fluxion, "TypeError")
    for cls in (fluxion.FluxionSyntaxError, fluxion.FluxionRuntimeError, fluxion.FluxionInternalError):
        assert issubclass(cls, fluxion.Error)


def test_unknown_attribute(m):
    with pytest.raises(AttributeError, match="no function or constructor"):
        m.nope


def test_ad_and_backend_options(m):
    with pytest.raises(fluxion.FluxionArgumentError, match="unknown AD mode"):
        fluxion.grad(m.loss, ad="nope")
    with pytest.raises(fluxion.FluxionArgumentError, match="unknown backend"):
        fluxion.grad(m.loss, backend="gpu")
    # Every built mode gives the same derivatives (to rounding).
    w = [0.3, -1.2, 2.0]
    g_fwd = fluxion.grad(m.loss, ad="fwd")(w, 1.5)
    h_fwd = fluxion.hessian(m.loss, ad="fwd")(w, 1.5)
    for mode in ("delta", "chad"):
        g = fluxion.grad(m.loss, ad=mode)(w, 1.5)
        assert max(abs(a - b) for a, b in zip(g_fwd, g)) < 1e-12, mode
        h = fluxion.hessian(m.loss, ad=mode)(w, 1.5)
        assert max(abs(a - b) for r, q in zip(h_fwd, h) for a, b in zip(r, q)) < 1e-12, mode
    # jvp and taylor do not depend on the mode (docs/language.md §5), nor do plain calls.
    assert fluxion.jvp(m.scalar, (1.0,), (1.0,), ad="delta")[0] == m.scalar(1.0)
    assert m.scalar.with_ad("chad")(1.0) == m.scalar(1.0)


def test_deep_recursion_is_an_error_not_a_crash():
    rec = fluxion.compile("fn r(n: Int) -> Int { if n == 0 { 0 } else { 1 + r(n - 1) } }")
    assert rec.r(10_000) == 10_000
    with pytest.raises(fluxion.FluxionRuntimeError, match="stack|memory"):
        rec.r(10**9)


def test_grad_of_an_integer_argument_is_an_error():
    # As jax.grad of an integer input: no gradient exists, so asking is a mistake
    # (it returned None).
    m = fluxion.compile("fn pick(xs: [Real], i: Int) -> Real { xs[i] * xs[i] }")
    for transform in (fluxion.grad, fluxion.value_and_grad):
        with pytest.raises(fluxion.FluxionArgumentError) as e:
            transform(m.pick, argnums=1)
        assert "holds no Real" in str(e.value) and "`i: Int`" in str(e.value)
    assert list(fluxion.grad(m.pick)([1.0, 3.0], 1)) == [0.0, 6.0]
