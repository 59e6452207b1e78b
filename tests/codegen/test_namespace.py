"""The one namespace: project text becomes legal, unique, never-reserved identifiers."""
from __future__ import annotations

import builtins
import keyword

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from revstudio.codegen.namespace import RESERVED, Namespace, is_safe_identifier, sanitize

HOSTILE = [
    "class", "def", "None", "True", "match", "_", "type", "print", "self", "torch", "nn", "Model",
    "__import__", "__class__", "a'b", 'a"b', "'''", '"""', "a\\b", "x\ny", "é", "日本", "💥",
    "1abc", "42", "os.system('rm -rf /')", "__import__('os').system('echo pwned')", "x#y", "",
    "REVSTUDIO_PROJECT", "forward", "a-b", "a b", "A-B", "\t", "\u200b", "ǅ", "ﬁ",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_becomes_a_safe_identifier(text: str) -> None:
    name = Namespace().name(text)
    assert name.isidentifier() and name.isascii()
    assert not keyword.iskeyword(name) and not keyword.issoftkeyword(name)
    assert name not in dir(builtins) and name not in RESERVED
    assert not name.startswith("_")


def test_same_text_same_name_and_distinct_texts_distinct_names() -> None:
    ns = Namespace()
    a, b, c = ns.name("a-b"), ns.name("a.b"), ns.name("a_b")
    assert len({a, b, c}) == 3
    assert ns.name("a-b") == a
    assert a == "a_b"


def test_keywords_get_a_trailing_underscore_and_readable_stems() -> None:
    ns = Namespace()
    assert ns.name("class") == "class_"
    assert ns.name("Conv-1") == "conv_1"
    assert ns.name("héllo") == "hello"
    assert ns.name("1x1") == "v_1x1"


def test_child_scope_avoids_parent_names() -> None:
    ns = Namespace()
    ns.reserve("x")
    child = ns.child()
    assert child.name("x") != "x"


def test_keys_separate_names_for_the_same_text() -> None:
    ns = Namespace()
    assert ns.name("out", key=("n1", "out")) != ns.name("out", key=("n2", "out"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=20), min_size=1, max_size=20))
def test_any_texts_give_unique_safe_identifiers(texts: list[str]) -> None:
    ns = Namespace()
    names = {t: ns.name(t) for t in texts}
    assert len(set(names.values())) == len(names)
    assert all(is_safe_identifier(n) for n in names.values())
    assert all(sanitize(t) for t in texts)
