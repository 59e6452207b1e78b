"""docs/tutorial.md stays true: its commands and scripts run as written, in order, from an empty
folder, and print what the page shows; each message its "Mistakes on purpose" part quotes is what
revstudio says to that mistake.

In a shown output, a line ``...`` stands for any number of lines and ``...`` inside a line for any
text (timings, paths). ``revstudio`` is this checkout's, put first on PATH.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from doc_timings import timings_masked

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")
EXAMPLES = ROOT / "resources" / "examples"
BLOCK = re.compile(r"^```(console|python|text)\n(.*?)^```", re.M | re.S)


def _line_fits(doc: str, out: str) -> bool:
    return re.fullmatch(".*".join(re.escape(part) for part in doc.split("...")), out) is not None


def fits(doc: list[str], out: list[str]) -> bool:
    """Whether ``out`` is ``doc`` with each ``...`` line standing for zero or more lines, the machine's
    timings masked in both (a ``runs`` table's duration and its padding: ``doc_timings``)."""
    return _fits(timings_masked(doc), timings_masked(out))


def _fits(doc: list[str], out: list[str]) -> bool:
    if not doc:
        return not out
    if doc[0].strip() == "...":
        return any(_fits(doc[1:], out[i:]) for i in range(len(out) + 1))
    return bool(out) and _line_fits(doc[0], out[0]) and _fits(doc[1:], out[1:])


def _part(title: str) -> str:
    start = TUTORIAL.index(f"\n## {title}")
    end = TUTORIAL.find("\n## ", start + 1)
    return TUTORIAL[start:end if end >= 0 else None]


def _commands(block: str) -> list[tuple[str, list[str]]]:
    """A console block's ``$ command`` lines, each with the lines shown after it."""
    runs: list[tuple[str, list[str]]] = []
    for line in block.rstrip("\n").split("\n"):
        if line.startswith("$ "):
            runs.append((line[2:], []))
        else:
            runs[-1][1].append(line)
    return runs


@pytest.fixture()
def class_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder as the working one, with this checkout's ``revstudio`` first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "revstudio"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m revstudio "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    folder = tmp_path / "class"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.chdir(folder)
    return folder


@pytest.mark.slow
def test_every_command_and_script_runs_as_written(class_folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    blocks = BLOCK.findall(TUTORIAL)
    ran = 0
    for i, (kind, body) in enumerate(blocks):
        if kind == "console":
            for command, shown in _commands(body):
                done = subprocess.run(["bash", "-c", command], cwd=class_folder, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, timeout=300)
                out = done.stdout.rstrip("\n").split("\n")
                assert fits(shown, out), f"$ {command}\n" + "\n".join(out)
                ran += 1
        elif kind == "python":
            scope: dict[str, Any] = {}
            exec(compile(body, f"docs/tutorial.md, block {i + 1}", "exec"), scope)  # noqa: S102 - our docs
            printed = capsys.readouterr().out
            if printed:  # what a script prints is the text block right after it
                nxt = blocks[i + 1]
                assert nxt[0] == "text" and fits(nxt[1].rstrip("\n").split("\n"), printed.rstrip("\n").split("\n")), \
                    printed
            ran += 1
    assert ran >= 9
    assert (class_folder / "first-run" / "checkpoints" / "last.pt").exists()
    assert not (class_folder / "hwc-run").exists()  # refused before a run folder was kept


def _digits() -> Any:
    import revstudio as rs

    return rs.load(EXAMPLES / "digits_revnet.revs")


def _rewire(g: Any, src: str, dst: str) -> None:
    node, port = dst.split(".")
    for edge in g.edges_into(node, port):
        g.remove_edge(edge)
    g.connect(src, dst)


def _between(g: Any, node_type: str, params: dict[str, Any], src: str, dst: str) -> None:
    g.add_node(node_type, "extra", params)
    _rewire(g, "extra.out", dst)
    g.connect(src, "extra.in")


def _messages(g: Any) -> list[str]:
    import revstudio as rs

    report = rs.check(g)
    found = [f"{d.message}" for d in report.diagnostics]
    from revstudio.qt.report_facts import graph_problem

    refusal = graph_problem(g, report)
    return found + ([refusal] if refusal else [])


def _wrong_port(tmp: Path) -> list[str]:
    pytest.importorskip("PySide6")
    from revstudio.core.graph import PortRef
    from revstudio.qt.canvas.connect_rules import structural_reason

    g = _digits()
    drop = structural_reason(g, PortRef.parse("block0_split.out0"), PortRef.parse("block0_f_conv1.in"))
    _rewire(g, "block0_split.out0", "block0_f_conv1.in")
    return [str(drop), *_messages(g)]


def _mismatched_channels(tmp: Path) -> list[str]:
    import revstudio as rs

    g = _digits()
    g.set_param("block0_f_conv2", "out_channels", 16)
    coupling = rs.load(EXAMPLES / "revnet_coupling.revs")
    coupling.groups["f"].set_param("f_conv2", "out_channels", 6)
    return _messages(g) + _messages(coupling)


def _odd_split(tmp: Path) -> list[str]:
    g = _digits()
    g.set_param("stem", "out_channels", 15)
    return _messages(g)


def _no_output(tmp: Path) -> list[str]:
    g = _digits()
    g.remove_node("logits")
    return _messages(g)


def _dropout_and_batchnorm(tmp: Path) -> list[str]:
    import revstudio as rs

    said = []
    for node_type, params in (("Dropout", {"p": 0.2}), ("Norm", {"kind": "batch"})):
        g = _digits()
        _between(g, node_type, params, "block0_f_conv2.out", "block0_add1.in1")
        report = rs.check(g)
        assert report.valid and "extra" in report.regions[0].nodes, node_type
        path = tmp / f"{node_type}.revs"
        rs.save(g, path)
        # the page's `revstudio gradcheck FILE`, run here: a child of its own spent 3-4 s of CPU starting
        # (torch and revstudio) before the same check printed the same lines
        from revstudio.cli import main

        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            main(["gradcheck", str(path)])
        said.append(printed.getvalue())
    return [line for out in said for line in out.split("\n")]


def _closing(tmp: Path) -> list[str]:
    return [(ROOT / "revstudio" / "qt" / "dialogs.py").read_text(encoding="utf-8")]


MISTAKES = {
    "Wire the wrong port": _wrong_port,
    "Mismatched channels in a coupling": _mismatched_channels,
    "An odd channel count into a split": _odd_split,
    "No Output node": _no_output,
    "Dropout or BatchNorm inside a reversible region": _dropout_and_batchnorm,
    "Closing the window mid-training": _closing,
}


def test_each_mistake_says_what_the_page_quotes(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    part = _part("6. Mistakes on purpose")
    sections = dict(re.findall(r"^### (.+?)\n(.*?)(?=^### |\Z)", part, re.M | re.S))
    assert set(MISTAKES) <= set(sections), sorted(sections)
    for title, make in MISTAKES.items():
        quoted = [body.strip("\n") for kind, body in BLOCK.findall(sections[title]) if kind == "text"]
        assert quoted, title
        said = make(tmp_path)
        for text in quoted:
            pattern = ".*".join(re.escape(part) for part in text.split("..."))
            hits = [s for s in said if re.search(pattern, s)]
            if make is _dropout_and_batchnorm:  # both variants, each its own gradcheck
                assert len(hits) == 2, (title, said)
            assert hits, f"{title}: the page quotes\n{text}\nbut revstudio says\n" + "\n".join(said)


def test_the_readme_and_the_editor_page_lead_to_the_tutorial() -> None:
    assert "[docs/tutorial.md](docs/tutorial.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "[tutorial.md](tutorial.md)" in (ROOT / "docs" / "editor.md").read_text(encoding="utf-8")
    project = json.loads((EXAMPLES / "digits_revnet.revs").read_text(encoding="utf-8"))
    assert project["training"]["steps"] == 400  # the page's "trains 400 steps"


def test_the_cpu_install_pins_the_torch_the_makefile_installs() -> None:
    """The CPU build the page installs first is the version ``make`` asks for, so ``make`` keeps it
    (``torch==2.13.0`` is met by ``2.13.0+cpu``) instead of fetching the CUDA build over it."""
    pin = re.search(r"^TORCH \?= (torch==\S+)$", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    assert pin is not None
    assert f".venv/bin/pip install {pin.group(1)} --index-url https://download.pytorch.org/whl/cpu\nmake run" \
        in _part("1. Install")


def test_the_figures_the_page_points_at_in_the_app_are_the_apps() -> None:
    """Part 3 quotes the digits example's region label and status bar figures, and part 4 says the
    status bar's standard figure grows with ``times`` while the reversible one stays."""
    pytest.importorskip("PySide6")
    import revstudio as rs
    from revstudio.qt.memory_figures import region_badge, status_text

    part = " ".join(_part("3. The first example").split())  # (the page wraps its lines)
    report = rs.check(_digits())
    (region,) = report.regions
    label = region_badge(report, region.id)[0]
    assert f"`{label}`" in part, label
    kept = status_text(report).split("   ")[1]  # type: ignore[union-attr]
    assert f"`{kept}`" in part, kept
    figures = []
    for times in (2, 4, 8, 16):
        g = rs.load(EXAMPLES / "revnet_coupling.revs")
        g.set_param("blocks", "times", times)
        figures.append(status_text(rs.check(g)).split("   ")[1])  # type: ignore[union-attr]
    assert len({f.split(" · ")[1] for f in figures}) == 1 and len({f.split(" · ")[0] for f in figures}) == 4, figures


def _runs_sample() -> tuple[str, list[str]]:
    """The page's ``revstudio runs first-run`` command and the lines it shows."""
    found = [(c, shown) for c, shown in _commands(BLOCK.findall(_part("5."))[-1][1]) if c.startswith("revstudio runs")]
    assert len(found) == 1
    return found[0]


def _listed(folder: Path, capsys: pytest.CaptureFixture[str], seconds: int, status: str = "finished",
            step: int = 400) -> list[str]:
    """What ``revstudio runs first-run`` prints for a run of ``seconds`` that ended ``status`` at ``step``."""
    from revstudio.cli import main

    run = folder / "first-run"
    run.mkdir(exist_ok=True)
    (run / "status.json").write_text(json.dumps({
        "status": status, "step": step, "total_steps": 400, "started": "2026-12-01T10:00:00+00:00",
        "ended": f"2026-12-01T{10 + seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}+00:00",
        "metrics": {"loss": 0.0213, "accuracy": 0.993}}), encoding="utf-8")
    main(["runs", str(run)])
    return capsys.readouterr().out.rstrip("\n").split("\n")


# A loaded machine took 1 min 04 s over the tutorial's run: the duration's width moved the header's
# columns and the page's table no longer fitted, though every column and value was the page's.
@pytest.mark.parametrize("seconds", [12, 64, 3 * 3600 + 7 * 60])
def test_the_runs_table_fits_however_long_the_run_took(seconds: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    _command, shown = _runs_sample()
    out = _listed(tmp_path, capsys, seconds)
    assert fits(shown, out), "\n".join(out)


def test_the_runs_table_still_fails_on_another_column_or_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    _command, shown = _runs_sample()
    assert not fits(shown, _listed(tmp_path, capsys, 64, status="stopped"))
    assert not fits(shown, _listed(tmp_path, capsys, 64, step=399))
    out = _listed(tmp_path, capsys, 64)
    assert not fits(shown, [out[0].replace("duration", "duration  learning"), *out[1:]])
    assert not fits(shown, [out[0].replace("status", "state"), *out[1:]])
    assert not fits(shown, [out[0], out[1].replace("first-run", "second-run")])
