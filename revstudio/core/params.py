"""Parameter kinds declared by meaning, not by widget.

A :class:`Param` knows its default, its help text and how to validate a value
taken from a project file or typed in the inspector. ``validate`` returns the
normalised value or raises :class:`ParamError` with a message that says what
is allowed. The inspector maps each kind to an editor; the model never names
a widget.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_DIM = 1 << 20  # larger sizes are almost certainly typos; keeps arithmetic sane


class ParamError(ValueError):
    """A parameter value is not allowed; the message says what is."""


def _show(value: Any, limit: int = 60) -> str:
    """``repr`` cut to a readable length: values come from files and may be huge."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**30:
        return "a number with more than 30 digits"
    text = repr(value) if not isinstance(value, (list, tuple, dict)) or len(value) <= 16 else (
        f"a {type(value).__name__} of {len(value)} items")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class Param:
    """Base of all parameter kinds."""

    default: Any = None
    help: str = ""

    kind: str = field(default="param", init=False)

    def validate(self, value: Any) -> Any:  # pragma: no cover - overridden
        return value

    def describe(self) -> str:
        """A short phrase saying what values are allowed."""
        return self.kind


@dataclass(frozen=True)
class Int(Param):
    default: int = 0
    help: str = ""
    min: int | None = None
    max: int | None = MAX_DIM
    kind: str = field(default="int", init=False)

    def validate(self, value: Any) -> int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not _is_int(value):
            raise ParamError(f"expected an integer, got {_show(value)}; {self.describe()}")
        if self.min is not None and value < self.min:
            raise ParamError(f"{_show(value)} is too small; {self.describe()}")
        if self.max is not None and value > self.max:
            raise ParamError(f"{_show(value)} is too large; {self.describe()}")
        return int(value)

    def describe(self) -> str:
        lo = "" if self.min is None else f">= {self.min}"
        hi = "" if self.max is None else f"<= {self.max}"
        rng = " and ".join(p for p in (lo, hi) if p)
        return f"use an integer {rng}".rstrip()


@dataclass(frozen=True)
class Float(Param):
    default: float = 0.0
    help: str = ""
    min: float | None = None
    max: float | None = None
    kind: str = field(default="float", init=False)

    def validate(self, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParamError(f"expected a number, got {_show(value)}; {self.describe()}")
        try:
            number = float(value)
        except OverflowError:  # an integer with hundreds of digits
            raise ParamError(f"the number is far too large; {self.describe()}") from None
        if not math.isfinite(number):
            raise ParamError(f"{_show(number)} is not a finite number; {self.describe()}")
        if self.min is not None and number < self.min:
            raise ParamError(f"{_show(number)} is too small; {self.describe()}")
        if self.max is not None and number > self.max:
            raise ParamError(f"{_show(number)} is too large; {self.describe()}")
        return number

    def describe(self) -> str:
        lo = "" if self.min is None else f">= {self.min:g}"
        hi = "" if self.max is None else f"<= {self.max:g}"
        rng = " and ".join(p for p in (lo, hi) if p)
        return f"use a number {rng}".rstrip()


@dataclass(frozen=True)
class Choice(Param):
    default: str = ""
    help: str = ""
    options: tuple[str, ...] = ()
    kind: str = field(default="choice", init=False)

    def validate(self, value: Any) -> str:
        if value not in self.options:
            raise ParamError(f"{_show(value)} is not one of {', '.join(self.options)}")
        return str(value)

    def describe(self) -> str:
        return "one of " + ", ".join(self.options)


@dataclass(frozen=True)
class Bool(Param):
    default: bool = False
    help: str = ""
    kind: str = field(default="bool", init=False)

    def validate(self, value: Any) -> bool:
        if not isinstance(value, bool):
            raise ParamError(f"expected true or false, got {_show(value)}")
        return value

    def describe(self) -> str:
        return "true or false"


@dataclass(frozen=True)
class Str(Param):
    default: str = ""
    help: str = ""
    max_length: int = 200
    kind: str = field(default="str", init=False)

    def validate(self, value: Any) -> str:
        if not isinstance(value, str):
            raise ParamError(f"expected text, got {_show(value)}")
        if len(value) > self.max_length:
            raise ParamError(f"text is longer than {self.max_length} characters")
        return value

    def describe(self) -> str:
        return "text"


@dataclass(frozen=True)
class IntList(Param):
    """A list of integers (e.g. split sizes)."""

    default: tuple[int, ...] = ()
    help: str = ""
    min: int | None = 1
    max: int | None = MAX_DIM
    min_length: int = 0
    max_length: int = 64
    kind: str = field(default="int_list", init=False)

    def validate(self, value: Any) -> tuple[int, ...]:
        if not isinstance(value, (list, tuple)):
            raise ParamError(f"expected a list of integers, got {_show(value)}")
        if not self.min_length <= len(value) <= self.max_length:
            raise ParamError(
                f"expected between {self.min_length} and {self.max_length} entries, got {len(value)}"
            )
        item = Int(min=self.min, max=self.max)
        out = []
        for i, v in enumerate(value):
            try:
                out.append(item.validate(v))
            except ParamError as exc:
                raise ParamError(f"entry {i}: {exc}") from None
        return tuple(out)

    def describe(self) -> str:
        return "a list of integers"


@dataclass(frozen=True)
class Shape(IntList):
    """A tensor shape without the batch dimension."""

    min_length: int = 1
    max_length: int = 4
    kind: str = field(default="shape", init=False)

    def describe(self) -> str:
        return "a shape without the batch dimension, e.g. [3, 32, 32]"


@dataclass(frozen=True)
class IntOrChoice(Param):
    """Either an integer or one of a few words (e.g. padding: int or "same")."""

    default: Any = 0
    help: str = ""
    options: tuple[str, ...] = ()
    min: int | None = 0
    max: int | None = MAX_DIM
    kind: str = field(default="int_or_choice", init=False)

    def validate(self, value: Any) -> int | str:
        if isinstance(value, str):
            if value in self.options:
                return value
            raise ParamError(f"{_show(value)} is not allowed; {self.describe()}")
        try:
            return Int(min=self.min, max=self.max).validate(value)
        except ParamError:
            raise ParamError(f"{_show(value)} is not allowed; {self.describe()}") from None

    def describe(self) -> str:
        # One sentence covering both halves: a user who typed a wrong word
        # needs to learn that numbers work too, and the other way round.
        words = " or ".join(repr(o) for o in self.options) if len(self.options) <= 2 else (
            "one of " + ", ".join(repr(o) for o in self.options))
        lo = "" if self.min is None else f" >= {self.min}"
        text = f"use an integer{lo} or {words}" if words else f"use an integer{lo}"
        if self.max is not None and self.max != MAX_DIM:  # MAX_DIM only guards against typos
            text += f" (integers up to {self.max})"
        return text


@dataclass(frozen=True)
class IntOrList(Param):
    """Either a count or an explicit list of sizes (e.g. Split sections)."""

    default: Any = 2
    help: str = ""
    min: int | None = 1
    max: int | None = 64
    kind: str = field(default="int_or_list", init=False)

    def validate(self, value: Any) -> int | tuple[int, ...]:
        if isinstance(value, (list, tuple)):
            return IntList(min=1, min_length=1, max_length=64).validate(value)
        return Int(min=self.min, max=self.max).validate(value)

    def describe(self) -> str:
        return "a count or a list of sizes"


@dataclass(frozen=True)
class GroupRef(Param):
    """The name of a sub-graph in the project's ``groups``."""

    default: str = ""
    help: str = ""
    optional: bool = False
    kind: str = field(default="group", init=False)

    def validate(self, value: Any) -> str:
        if not isinstance(value, str):
            raise ParamError(f"expected a group name, got {_show(value)}")
        if not value and not self.optional:
            raise ParamError("choose a group")
        return value

    def describe(self) -> str:
        return "the name of a group in this project"


def to_json(value: Any) -> Any:
    """Params are stored as JSON: tuples become lists (at any depth)."""
    if isinstance(value, (tuple, list)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    return value


def validate_all(params: dict[str, Param], values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Validate ``values`` against ``params``; returns (normalised, errors by name).

    Unknown names are errors; names that are missing take their defaults.
    """
    out: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for name, value in values.items():
        spec = params.get(name)
        if spec is None:
            known = ", ".join(sorted(params)) or "none"
            errors[name] = f"unknown parameter {_show(name)} (known: {known})"
            continue
        try:
            out[name] = spec.validate(value)
        except ParamError as exc:
            errors[name] = str(exc)
        except (TypeError, ValueError, OverflowError) as exc:  # a value no kind expected
            errors[name] = f"{_show(value)} is not allowed ({exc}); {spec.describe()}"
    for name, spec in params.items():
        if name not in out and name not in errors:
            out[name] = spec.default
    return out, errors


__all__: Sequence[str] = [
    "Bool", "Choice", "Float", "GroupRef", "Int", "IntList", "IntOrChoice", "IntOrList",
    "Param", "ParamError", "Shape", "Str", "to_json", "validate_all",
]
