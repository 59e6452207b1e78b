"""The embedded project constant: written with repr, read back with ast, never executed."""
from __future__ import annotations

import ast
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from revstudio.core.pyfile import CONSTANT, EmbeddedError, embed, read_embedded


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_any_text_round_trips_and_parses(text: str) -> None:
    source = embed(text)
    tree = ast.parse(source)
    assert len(tree.body) == 1
    assert read_embedded(source) == text


def test_hostile_json_round_trips_without_running_anything(tmp_path) -> None:
    marker = tmp_path / "pwned"
    payload = json.dumps(
        {"name": f"\"\"\"'''\\\n__import__('pathlib').Path({str(marker)!r}).touch()#", "ids": ["é", "\u2028", "\x00"]},
        indent=2,
        ensure_ascii=False,
    )
    source = "import sys\n" + embed(payload) + "raise SystemExit('must never run')\n"
    assert read_embedded(source, "x.py") == payload
    assert not marker.exists()
    namespace: dict[str, object] = {}
    exec(compile(embed(payload), "x.py", "exec"), namespace)  # the assignment alone is inert data
    assert namespace[CONSTANT] == payload
    assert not marker.exists()


@pytest.mark.parametrize(
    "source, message",
    [
        ("x = 1\n", "no REVSTUDIO_PROJECT"),
        ("REVSTUDIO_PROJECT = open('x').read()\n", "plain string literal"),
        ("def (:\n", "not valid Python"),
    ],
)
def test_missing_or_computed_constant_is_a_clear_error(source: str, message: str) -> None:
    with pytest.raises(EmbeddedError, match=message) as info:
        read_embedded(source, "model.py")
    assert "model.py" in str(info.value)
