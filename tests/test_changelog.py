"""The CHANGELOG's [Unreleased] reads as what changed since the last release, not as a diary:
one entry per feature, and no entry describing what a later change of the same release replaced."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
UNRELEASED = TEXT.split("## [Unreleased]", 1)[1].split("\n## [", 1)[0]


def sections() -> dict[str, list[str]]:
    """{subsection: its entries, each joined into one line}."""
    out: dict[str, list[str]] = {}
    for part in re.split(r"^### ", UNRELEASED, flags=re.M)[1:]:
        title, _, body = part.partition("\n")
        entries = re.split(r"^- ", body, flags=re.M)[1:]
        out[title.strip()] = [" ".join(e.split()) for e in entries]
    return out


def test_a_menu_command_added_in_this_release_is_one_entry() -> None:
    menu = re.compile(r"^((?:File|Edit|View|Run|Tools|Help) > [^(:.,]+?)\s*[(:]")
    added = {m.group(1) for e in sections()["Added"] if (m := menu.match(e))}
    for title in ("Changed", "Fixed"):
        for entry in sections().get(title, []):
            m = menu.match(entry)
            assert not (m and m.group(1) in added), f"{m and m.group(1)} is added and also {title.lower()}"


def test_the_readme_picture_entries_name_the_example_the_screenshot_test_opens() -> None:
    shot = (ROOT / "tests" / "qt" / "test_real_window_screenshot.py").read_text(encoding="utf-8")
    example = re.search(r'RS_SHOT_EXAMPLE", "(\w+)"', shot).group(1)  # type: ignore[union-attr]
    named = re.findall(r"(?:picture shows|\(Xvfb\) opens) (\w+)", " ".join(UNRELEASED.split()))
    assert named and set(named) == {example}, named


def test_a_saved_for_backward_count_may_be_negative_for_backward_only() -> None:
    from revstudio.core.spec import SavedTensors  # the rule the entries describe

    assert SavedTensors(ports=(), backward_values=-1).problem() is None
    assert SavedTensors(ports=(), values=-1).problem() is not None
    for entry in (e for es in sections().values() for e in es if "saved_for_backward" in e):
        if re.search(r"count that is[^.;]*negative", entry):
            assert "backward_*" in entry, entry


def test_the_divergence_rule_in_the_docs_is_the_code_and_its_healthy_claim_is_tested() -> None:
    from revstudio.training.divergence import FACTOR, START_STEPS

    cli = " ".join((ROOT / "docs" / "cli.md").read_text(encoding="utf-8").split())
    assert f"more than {FACTOR:.0f} times the start's size above the start" in cli
    assert f"the lowest loss of the run's first {START_STEPS} steps" in cli
    # "stay within 100 times their start" was measured by nothing: the test only sees no warning
    healthy = re.search(r"Healthy runs of the example projects[^.]*\.[^.]*\.", cli)
    assert healthy is not None, "cli.md's healthy-runs sentence went missing"
    named = re.search(r"`(tests/[\w/]+\.py)`", healthy.group(0))
    assert named is not None, healthy.group(0)
    test = (ROOT / named.group(1)).read_text(encoding="utf-8")
    assert "def test_healthy_examples_never_warn" in test
