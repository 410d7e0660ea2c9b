"""Enum values: a constructor name and its fields (``Circle(1.0)``)."""

from __future__ import annotations

from typing import Any, Callable


class Variant:
    """A value of a Fluxion enum: ``Variant("Circle", 1.0)``.

    Fluxion returns enum values as ``Variant`` objects (``enum`` names the enum);
    arguments may be a ``Variant``, a dict as in ``fluxion run --json``
    (``{"Circle": [1.0]}``) or, for a constructor without fields, its name.
    ``m.Circle(1.0)`` builds one from a module's constructor.
    """

    __slots__ = ("name", "fields", "enum")

    def __init__(self, name: str, *fields: Any, enum: str | None = None) -> None:
        self.name = name
        self.fields = tuple(fields)
        self.enum = enum

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Variant):
            return NotImplemented
        return self.name == other.name and _fields_equal(self.fields, other.fields)

    def __hash__(self) -> int:
        return hash((self.name, len(self.fields)))

    def __repr__(self) -> str:
        if not self.fields:
            return self.name
        return f"{self.name}({', '.join(map(repr, self.fields))})"

    def __getitem__(self, i: int) -> Any:
        return self.fields[i]

    def __len__(self) -> int:
        return len(self.fields)

    def to_json(self) -> dict[str, list[Any]]:
        """The value as ``--json`` writes it: ``{"Circle": [1.0]}`` (fields as they are)."""
        return {self.name: list(self.fields)}


def _fields_equal(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        eq = x == y
        # NumPy arrays compare elementwise.
        if hasattr(eq, "all"):
            eq = bool(eq.all()) and getattr(x, "shape", None) == getattr(y, "shape", None)
        if not eq:
            return False
    return True


def constructor(enum: str, name: str, arity: int) -> Callable[..., Variant]:
    """The constructor ``name`` of ``enum`` as a callable (``m.Circle``)."""

    def make(*fields: Any) -> Variant:
        if len(fields) != arity:
            raise TypeError(f"{name} takes {arity} field(s), {len(fields)} given")
        return Variant(name, *fields, enum=enum)

    make.__name__ = name
    make.__qualname__ = f"{enum}.{name}"
    make.__doc__ = f"Constructor {name} of the Fluxion enum {enum} ({arity} field(s))."
    return make
