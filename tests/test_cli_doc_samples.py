"""docs/cli.md's terminal samples are what the commands print now.

Each ``$ revstudio ...`` sample in docs/cli.md is run as written (from the checkout's root)
and its output compared with the doc line by line: a doc line ``...`` stands for any number of
lines, and only what varies from run to run or machine to machine (timings, float64 rounding
errors) is masked. A change to an output's form then fails here until the doc shows it.
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest
from doc_timings import timings_masked

torch = pytest.importorskip("torch")

from revstudio.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CLI_MD = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")


@pytest.fixture(autouse=True)
def _few_threads() -> None:
    torch.set_num_threads(1)


def sample(command: str) -> list[str]:
    """The lines docs/cli.md shows after ``$ COMMAND``, up to the next ``$`` line or the fence."""
    block = re.search(rf"^\$ {re.escape(command)}[^\n]*\n(.*?)^(?:\$ |```)", CLI_MD, re.M | re.S)
    assert block is not None, f"docs/cli.md has no sample of '$ {command}'"
    return block.group(1).rstrip("\n").split("\n")


def fits(doc: list[str], out: list[str]) -> bool:
    """Whether ``out`` is ``doc`` with each ``...`` line standing for zero or more lines."""
    if not doc:
        return not out
    if doc[0].strip() == "...":
        return any(fits(doc[1:], out[i:]) for i in range(len(out) + 1))
    return bool(out) and doc[0] == out[0] and fits(doc[1:], out[1:])


def printed(argv: list[str], capsys: pytest.CaptureFixture[str], code: int = 0) -> list[str]:
    assert main(argv) == code
    return capsys.readouterr().out.rstrip("\n").split("\n")


def test_the_check_sample(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    doc = sample("revstudio check resources/examples/revnet_wired.revs")
    out = printed(["check", "resources/examples/revnet_wired.revs"], capsys)
    assert fits(doc, out), "\n".join(out)


# the project the doc's "A graph with errors" sample checks: a mistyped type, an unknown parameter, a Split
# whose sections do not add up
BROKEN = {"format": "revstudio", "version": 1, "name": "broken", "groups": {}, "training": {}, "view": {},
          "nodes": [{"id": "x", "type": "Input", "params": {"shape": [3, 16, 16]}},
                    {"id": "stem", "type": "Conv", "params": {"out_channels": 8, "kernel_size": 3, "padding": "same"}},
                    {"id": "c", "type": "conv", "params": {"out_channels": 8}},
                    {"id": "s", "type": "Split", "params": {"sections": [3, 4]}},
                    {"id": "p", "type": "Pool", "params": {}},
                    {"id": "l", "type": "Linear", "params": {"out_features": 4, "colour": "red"}},
                    {"id": "o", "type": "Output", "params": {}}],
          "edges": [["x.out", "stem.in"], ["stem.out", "c.in"], ["stem.out", "s.in"], ["stem.out", "p.in"],
                    ["p.out", "l.in"], ["l.out", "o.in"]]}


def test_the_broken_check_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "broken.revs").write_text(json.dumps(BROKEN), encoding="utf-8")
    doc = sample("revstudio check broken.revs")
    assert sample("echo $?") == ["1"]  # (the exit code the doc shows next)
    out = printed(["check", "broken.revs"], capsys, code=1)
    assert fits(doc, out), "\n".join(out)


# float figures (errors, norms): their last digits follow the CPU's kernels
_FIGURE = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]\d+)?(?![\w.])")


def _figures_masked(lines: list[str]) -> list[str]:
    """Figures as ``#``, and a listing row's name too (the rows come worst first, so the figures order
    them); the columns are right-aligned, so the padding the figures' widths set goes as well."""
    named = re.compile(r"^(\s*(?:param|input|output|buffer)\s+)\S+")
    return [re.sub(r" +", " ", _FIGURE.sub("#", named.sub(r"\1N", line))) for line in lines]


def test_the_gradcheck_sample(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    doc = sample("revstudio gradcheck resources/examples/revnet_wired.revs")
    out = printed(["gradcheck", "resources/examples/revnet_wired.revs"], capsys)
    assert fits(_figures_masked(doc), _figures_masked(out)), "\n".join(out)


def versions_masked(lines: list[str]) -> list[str]:
    """The line of the versions and CPU threads measured with (this machine's, not the docs') as VERSIONS."""
    return [re.sub(r"^  revstudio \S+, torch \S+, python \S+, \d+ CPU threads?(?=;|$)", "  VERSIONS", line)
            for line in lines]


def _timings_masked(lines: list[str]) -> list[str]:
    """The seconds column (``0.0039 (0.0035-0.0041)``) as ``#``; bytes measured on the CPU are exact."""
    return [re.sub(r" +\d+\.\d{4} \(\d+\.\d{4}-\d+\.\d{4}\) +", " # ", line) for line in lines]


def test_the_memory_sample(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    doc = sample("revstudio memory resources/examples/revnet_wired.revs --batch 4 --repeat 3")
    out = printed(["memory", "resources/examples/revnet_wired.revs", "--batch", "4", "--repeat", "3"], capsys)
    doc, out = versions_masked(doc), versions_masked(out)
    assert len(doc) == len(out) and doc[:4] == out[:4], "\n".join(out)  # the header row's alignment too
    assert _timings_masked(doc) == _timings_masked(out), "\n".join(out)


def test_the_export_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    doc = sample("revstudio export resources/examples/digits_revnet.revs -o digits.py --with-training")
    out = printed(["export", str(ROOT / "resources/examples/digits_revnet.revs"), "-o", "digits.py",
                   "--with-training"], capsys)
    lines = re.compile(r"\(\d+ lines\)")  # the count changes with every change to the copied runtime
    assert [lines.sub("(N lines)", s) for s in doc] == [lines.sub("(N lines)", s) for s in out], "\n".join(out)


def test_the_train_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                          monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    for part in ("examples/digits_revnet.revs", "data/digits.npz"):  # (the run folder goes beside the project)
        (tmp_path / "resources" / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "resources" / part, tmp_path / "resources" / part)
    monkeypatch.chdir(tmp_path)
    doc = sample(TRAIN)
    out = printed(["train", "resources/examples/digits_revnet.revs", "--steps", "400"], capsys)
    assert fits(_train_masked(doc), _train_masked(out)), "\n".join(out)


TRAIN = "revstudio train resources/examples/digits_revnet.revs --steps 400"


def _train_masked(lines: list[str]) -> list[str]:
    """The train sample's figures, run folder, device and timings (an ETA: ``doc_timings``) masked."""
    lines = [re.sub(r"^run directory: .*", "run directory: D", s) for s in timings_masked(lines)]
    lines = [re.sub(r"^ship it: revstudio export \S+ ", "ship it: revstudio export D ", s) for s in lines]
    return _figures_masked([re.sub(r" on (cpu|cuda(:\d+)?) in ", " on DEVICE in ", s) for s in lines])


def test_the_train_sample_fits_on_a_slow_machine() -> None:
    """A loaded machine's first rows estimate an hour to go (``ETA 1:02:03``, a field more than ``00:17``):
    the doc promises the progress line's fields, not this machine's speed."""
    doc = sample(TRAIN)
    slow = [re.sub(r"ETA \d\d:\d\d", "ETA 1:02:03", s) for s in doc]
    assert slow != doc and fits(_train_masked(doc), _train_masked(slow))
    renamed = [s.replace("samples/s", "images/s") for s in slow]
    assert not fits(_train_masked(doc), _train_masked(renamed))


def test_the_evaluate_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["train", str(ROOT / "resources" / "examples" / "digits_revnet.revs"), "--steps", "20",
                 "--out", "runs/digits", "--device", "cpu", "--json"]) == 0
    capsys.readouterr()
    doc = sample("revstudio evaluate runs/digits --worst 3")
    out = printed(["evaluate", "runs/digits", "--worst", "3", "--device", "cpu"], capsys)

    def masked(lines: list[str]) -> list[str]:  # the figures and the time the file is named by vary
        return _figures_masked([re.sub(r"evaluations/[\d-]+\.json", "evaluations/T.json", s) for s in lines])

    assert fits(masked(doc), masked(out)), "\n".join(out)


def test_the_sample_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["train", str(ROOT / "resources" / "examples" / "glow_flow.revs"), "--steps", "2",
                 "--out", "runs/glow", "--device", "cpu", "--json"]) == 0
    capsys.readouterr()
    doc = sample("revstudio sample runs/glow -o samples.npz -n 64 --temperature 0.7")
    out = printed(["sample", "runs/glow", "-o", "samples.npz", "-n", "64", "--temperature", "0.7"], capsys)
    assert fits(doc, out), "\n".join(out)


def _summary(command: str) -> str:
    """The lines of docs/cli.md's command summary (its first code block) that show ``revstudio COMMAND``."""
    block = re.search(r"```\n(revstudio \[FILE\].*?)```", CLI_MD, re.S)
    assert block is not None, "docs/cli.md has no command summary"
    text, keep = "", False
    for line in block.group(1).splitlines():
        if line.startswith("revstudio "):
            keep = line.split()[1] == command
        if keep:
            text += line + "\n"
    return text


@pytest.mark.parametrize("command", ["check", "gradcheck", "memory", "runs", "evaluate", "sample", "export", "examples",
                                     "plugins", "nodes"])
def test_the_command_summary_shows_every_option(command: str) -> None:
    """A new user reads the summary first: gradcheck's --inputs was left out of it."""
    from revstudio.cli import _build_parser

    parser, _ = _build_parser(command)
    shown = _summary(command)
    assert shown, f"docs/cli.md's summary has no line for revstudio {command}"
    missing = [action.option_strings[-1] for action in parser._actions  # (-o OUT.py shows --output)
               if action.option_strings and "--help" not in action.option_strings
               and action.help != argparse.SUPPRESS  # (a hidden option only refuses, saying what to write)
               and not any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", shown) for o in action.option_strings)]
    assert not missing, shown
