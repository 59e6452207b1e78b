"""Parameter kinds: each validates file/inspector values and says what is allowed."""
from __future__ import annotations

from typing import Any

import pytest

from revstudio.core.params import (
    Bool,
    Choice,
    Float,
    GroupRef,
    Int,
    IntList,
    IntOrChoice,
    IntOrList,
    Param,
    ParamError,
    Shape,
    Str,
    to_json,
    validate_all,
)


@pytest.mark.parametrize(("kind", "value", "expected"), [
    (Int(min=1), 3, 3),
    (Int(min=1), 3.0, 3),            # JSON writers sometimes write 3.0
    (Float(min=0.0, max=1.0), 1, 1.0),
    (Choice(options=("a", "b")), "b", "b"),
    (Bool(), True, True),
    (Str(), "hi", "hi"),
    (IntList(), [1, 2], (1, 2)),
    (Shape(), [3, 32, 32], (3, 32, 32)),
    (IntOrChoice(options=("same",)), "same", "same"),
    (IntOrChoice(options=("same",)), 2, 2),
    (IntOrList(), 3, 3),
    (IntOrList(), [2, 6], (2, 6)),
    (GroupRef(), "blk", "blk"),
    (GroupRef(optional=True), "", ""),
])
def test_valid_values_are_normalised(kind: Param, value: Any, expected: Any) -> None:
    assert kind.validate(value) == expected


@pytest.mark.parametrize(("kind", "value", "message"), [
    (Int(min=1), 0, "too small"),
    (Int(min=1), 2.5, "expected an integer"),
    (Int(min=1), True, "expected an integer"),
    (Int(min=1), "3", "expected an integer"),
    (Int(), 1 << 40, "too large"),
    (Int(), 10**400, "more than 30 digits"),
    (Float(max=1.0), 2.0, "too large"),
    (Float(), float("nan"), "not a finite"),
    (Float(), 10**400, "far too large"),
    (Float(), False, "expected a number"),
    (Choice(options=("a", "b")), "c", "not one of a, b"),
    (Choice(options=("a", "b")), ["a"], "not one of"),
    (Bool(), 1, "true or false"),
    (Str(max_length=3), "long", "longer than 3"),
    (Str(), 5, "expected text"),
    (IntList(), "12", "list of integers"),
    (IntList(max_length=2), [1, 2, 3], "between 0 and 2"),
    (Shape(), [], "between 1 and 4"),
    (Shape(), [3, -1], "entry 1: -1 is too small"),
    (Shape(), [3, 1 << 30], "entry 1"),
    (IntOrChoice(options=("same",)), "valid", "is not allowed; use an integer >= 0 or 'same'"),
    (IntOrChoice(options=("same",), max=64), 100, "use an integer >= 0 or 'same' \\(integers up to 64\\)"),
    (IntOrChoice(options=("same",)), -1, "not allowed"),
    (IntOrList(), [], "between 1 and 64"),
    (IntOrList(), 0, "too small"),
    (GroupRef(), "", "choose a group"),
    (GroupRef(), 3, "group name"),
])
def test_bad_values_say_what_is_allowed(kind: Param, value: Any, message: str) -> None:
    with pytest.raises(ParamError, match=message):
        kind.validate(value)


def test_messages_stay_short_for_huge_values() -> None:
    with pytest.raises(ParamError) as info:
        Str().validate(["x" * 10_000] * 3)
    assert len(str(info.value)) < 200
    with pytest.raises(ParamError) as info:
        IntList().validate(list(range(1000)))
    assert len(str(info.value)) < 200


def test_describe_phrases() -> None:
    assert Int(min=1, max=8).describe() == "use an integer >= 1 and <= 8"
    assert Choice(options=("a", "b")).describe() == "one of a, b"
    assert "shape" in Shape().describe()


def test_validate_all_fills_defaults_and_reports_unknowns() -> None:
    params = {"n": Int(default=2, min=1), "mode": Choice(default="add", options=("add", "mul"))}
    values, errors = validate_all(params, {"n": 4, "colour": "red"})
    assert values == {"n": 4, "mode": "add"}
    assert errors == {"colour": "unknown parameter 'colour' (known: mode, n)"}
    values, errors = validate_all(params, {"n": 0})
    assert "n" in errors and values["mode"] == "add" and "n" not in values


def test_validate_all_survives_a_kind_that_raises_something_else() -> None:
    class Odd(Param):
        def validate(self, value: Any) -> Any:
            raise TypeError("unhashable")

    _, errors = validate_all({"x": Odd()}, {"x": [1]})
    assert "not allowed" in errors["x"]


def test_to_json_turns_tuples_into_lists_at_any_depth() -> None:
    assert to_json((1, (2, 3))) == [1, [2, 3]]
    assert to_json({"a": (1,)}) == {"a": [1]}
    assert to_json("s") == "s"
