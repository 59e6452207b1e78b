"""``revstudio gradcheck`` and ``revstudio memory``: exit codes, JSON schema, human text."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from revstudio.cli import main  # noqa: E402
from revstudio.core.generate import revnet_chain  # noqa: E402
from revstudio.core.project import save  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "resources" / "examples" / "revnet_wired.revs"


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture
def small(small_revnet: Path) -> str:
    return str(small_revnet)


@pytest.fixture
def broken(tmp_path: Path) -> str:
    graph = revnet_chain(1, channels=4, size=4)
    graph.add_node("Conv", "lonely", {"out_channels": 3})
    path = tmp_path / "broken.revs"
    save(graph, path)
    return str(path)


def _json(capsys: pytest.CaptureFixture[str]) -> dict:
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1, out  # exactly one JSON object
    return json.loads(out[0], parse_constant=_not_json)


def _not_json(name: str) -> None:
    raise AssertionError(f"{name} is not valid JSON (RFC 8259 has no NaN or Infinity)")


def test_gradcheck_json_on_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gradcheck", str(EXAMPLE), "--json"]) == 0
    data = _json(capsys)
    assert data["ok"] is True and data["dtype"] == "float64" and data["tolerance"] == 1e-10
    assert data["batch"] == 2 and data["mode"] == "reversible"
    assert data["max_error"] <= 1e-10
    assert data["parameters"] and data["inputs"] and data["inversion_error"]
    assert data["regions"][0]["id"] in data["inversion_error"]
    assert data["failures"] == []


def test_gradcheck_human_text(small: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gradcheck", small, "--batch", "3", "--dtype", "float32"]) == 0
    out = capsys.readouterr().out
    assert "reversible vs standard, float32, batch 3" in out
    assert "inversion error" in out and out.rstrip().endswith("within 0.0001")


def test_gradcheck_disagreement_exits_1(small: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gradcheck", small, "--dtype", "float32", "--tolerance", "1e-15"]) == 1
    assert "FAILED" in capsys.readouterr().out


def test_graph_with_errors_exits_1(broken: str, capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("gradcheck", "memory"):
        assert main([command, broken, "--json"]) == 1
        data = _json(capsys)
        assert data["exit_code"] == 1 and "lonely" in data["error"]


@pytest.mark.parametrize("argv", [
    ["gradcheck", "/no/such/file.revs"],
    ["memory", "/no/such/file.revs"],
    ["gradcheck", "FILE", "--batch", "0"],
    ["gradcheck", "FILE", "--dtype", "float16"],
    ["memory", "FILE", "--batch", "many"],
    ["memory", "FILE", "--device", "tpu"],
    ["memory", "FILE", "--top", "-1"],
    ["gradcheck", "FILE", "--tolerance", "nan"],
    ["gradcheck", "FILE", "--tolerance", "-1"],
    ["gradcheck", "FILE", "--seed", "99999999999999999999"],
    ["memory", "FILE", "--seed", "-1"],
    ["memory", "FILE", "--repeat", "0"],
])
def test_bad_usage_or_files_exit_2(argv: list[str], small: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [small if a == "FILE" else a for a in argv]
    assert main([*argv, "--json"]) == 2
    data = _json(capsys)
    assert data["exit_code"] == 2 and data["error"]
    if argv[-2] in ("--tolerance", "--seed", "--repeat"):  # the value is named, and what to write
        assert argv[-2] in data["error"] and "use" in data["error"] and "batch" not in data["error"]


@pytest.mark.parametrize("text", ["1001", "99999999999999999999"])
def test_repeat_has_a_ceiling(text: str) -> None:
    """--repeat 99999999999999999999 was taken and measured for ever (rs.memory's repeat= too, read by
    the same type): refused, naming the most it takes. Checked on the type itself, since the command
    before this rule would not come back."""
    import argparse

    from revstudio.clicmd._runargs import REPEAT_MAX, repeats

    assert repeats(str(REPEAT_MAX)) == REPEAT_MAX
    with pytest.raises(argparse.ArgumentTypeError, match=f"at most {REPEAT_MAX}"):
        repeats(text)


OVERFLOW = {  # x -> Linear -> (x * x) 40 times: gradients overflow to inf/nan in float32
    "format": "revstudio", "version": 1, "name": "overflow",
    "nodes": [{"id": "x", "type": "Input", "params": {"shape": [4]}},
              {"id": "l", "type": "Linear", "params": {"out_features": 4}},
              {"id": "r", "type": "Repeat", "params": {"group": "sq", "times": 40}},
              {"id": "y", "type": "Output", "params": {}}],
    "edges": [["x.out", "l.in"], ["l.out", "r.in"], ["r.out", "y.in"]],
    "groups": {"sq": {"nodes": [{"id": "gi", "type": "GroupInput", "params": {}},
                                {"id": "m", "type": "Merge", "params": {"mode": "mul"}},
                                {"id": "go", "type": "GroupOutput", "params": {}}],
                      "edges": [["gi.out", "m.in0"], ["gi.out", "m.in1"], ["m.out", "go.in"]]}},
}


def test_gradcheck_json_stays_json_when_gradients_overflow(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "overflow.revs"
    path.write_text(json.dumps(OVERFLOW), encoding="utf-8")
    assert main(["gradcheck", str(path), "--dtype", "float32", "--batch", "4", "--json"]) == 1
    data = _json(capsys)  # non-finite errors are null, as in train's rows, never NaN/Infinity
    assert data["ok"] is False and data["failures"]
    assert data["max_error"] is None and data["parameters"]["l.weight"]["error"] is None


def test_unavailable_cuda_is_a_clear_usage_error(small: str, capsys: pytest.CaptureFixture[str]) -> None:
    device = "cuda:99" if torch.cuda.is_available() else "cuda"
    assert main(["memory", small, "--device", device]) == 2
    err = capsys.readouterr().err
    assert "CUDA" in err and "--device" in err


def test_memory_json_schema(small: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", small, "--batch", "2", "--json"]) == 0
    data = _json(capsys)
    assert set(data["modes"]) == {"standard", "reversible", "checkpoint"}
    for mode in data["modes"].values():
        assert set(mode) == {"peak_bytes", "kept_bytes", "seconds", "seconds_runs"}
        assert isinstance(mode["peak_bytes"], int) and isinstance(mode["kept_bytes"], int)
        assert mode["peak_bytes"] >= mode["kept_bytes"] > 0 and mode["seconds"] > 0
    assert data["device"] == "cpu" and data["measured_with"] == "live tensor accounting"
    assert data["estimate_note"] is None  # on the CPU both count the model's tensors
    assert set(data["estimate"]["modes"]) == set(data["modes"])
    assert data["estimate"]["batch"] == 2


def test_memory_measures_a_bf16_step_and_shows_no_fp32_estimate(small: str,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """``--precision bf16`` steps as ``train --precision bf16`` does (forward under autocast): the
    peaks are bf16 steps', and no fp32 estimate stands beside them."""
    assert main(["memory", small, "--batch", "2", "--repeat", "1", "--json"]) == 0
    fp32 = _json(capsys)
    assert main(["memory", small, "--batch", "2", "--repeat", "1", "--json", "--precision", "bf16",
                 "--budget", "1KiB"]) == 0
    bf16 = _json(capsys)
    assert fp32["precision"] == "fp32" and bf16["precision"] == "bf16"
    assert bf16["estimate"] == {} and bf16["estimate_note"].startswith("no estimate: the estimate models fp32")
    assert bf16["budget"]["estimate_peak_bytes"] is None and bf16["budget"]["measured"]["peak_bytes"] > 0
    # standard mode keeps bf16 activations: a smaller step than fp32's
    assert 0 < bf16["modes"]["standard"]["peak_bytes"] < fp32["modes"]["standard"]["peak_bytes"]
    assert main(["memory", small, "--batch", "2", "--repeat", "1", "--precision", "bf16"]) == 0
    out = capsys.readouterr().out
    assert "forward under bf16 autocast" in out and "no estimate: the estimate models fp32 steps only" in out
    assert main(["memory", small, "--precision", "fp16"]) == 2
    assert "--precision fp16 needs a CUDA device" in capsys.readouterr().err


def test_memory_human_table(small: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", small, "--batch", "2"]) == 0
    out = capsys.readouterr().out
    for word in ("standard", "reversible", "checkpoint", "peak", "kept after fwd", "estimate kept"):
        assert word in out


def test_memory_top_json_lists_the_peak_per_mode(small: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", small, "--batch", "2", "--top", "3", "--json"]) == 0
    data = _json(capsys)
    for mode in data["modes"].values():
        assert mode["peak_phase"] in ("forward", "backward")
        assert 0 < len(mode["peak_tensors"]) <= 3
        sizes = [t["bytes"] for t in mode["peak_tensors"]]
        assert sizes == sorted(sizes, reverse=True)
        assert set(mode["peak_tensors"][0]) == {"bytes", "dtype", "shape", "op", "grad_fn", "where", "module"}
        assert sum(mode["peak_by_dtype"].values()) == mode["peak_bytes"]
    # the float32 model's reversible streams are compensated float32 pairs, and the inversion
    # error against the caller's batch is measured in float32: nothing wider at the peak
    assert set(data["modes"]["reversible"]["peak_by_dtype"]) == {"float32"}
    # tensors are named by the node (a module of the compiled graph) or the region that made them
    assert any(t["module"].startswith("region") for t in data["modes"]["reversible"]["peak_tensors"])


def test_memory_top_human_listing(small: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", small, "--batch", "2", "--repeat", "2", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "seconds: median (min-max of 2)" in out
    for mode in ("standard", "reversible", "checkpoint"):
        assert f"{mode}: peak " in out
    assert out.count("largest live tensors") == 3 and "allocated at" in out
    assert "revstudio/compiler/runtime" in out  # reversible peak tensors come from the runtime (runtime*.py)


def test_subprocess_has_no_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.revs"
    bad.write_text("{not json")
    proc = subprocess.run([sys.executable, "-m", "revstudio", "gradcheck", str(bad)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "bad.revs" in proc.stderr


def test_gradcheck_text_folds_the_rest_of_a_long_listing() -> None:
    from revstudio.diagnostics.gradcheck import GradReport, TensorError, summarize

    report = GradReport(dtype="float32", batch=2, seed=0, tolerance=1e-4, mode="reversible", gradient_norm=1.0,
                        parameters=[TensorError(f"p{i}", e, e, 1.0) for i, e in enumerate([3e-8, 2e-8, 1e-9, 0.0])])
    lines = summarize(report, limit=2)
    assert lines[-1] == "  ... and 2 more (errors at most 1e-09)"
    report.parameters[2] = TensorError("p2", 0.0, 0.0, 1.0)
    assert summarize(report, limit=2)[-1] == "  ... and 2 more (all exactly equal)"


def test_memory_times_every_mode_several_times_and_shows_the_spread(small: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", small, "--batch", "2", "--repeat", "3", "--json"]) == 0
    data = _json(capsys)
    assert data["device_memory_bytes"] is None  # the CPU: no device memory to fit into
    for mode in data["modes"].values():
        runs = mode["seconds_runs"]
        assert len(runs) == 3 and min(runs) <= mode["seconds"] <= max(runs)
    for figures in data["estimate"]["modes"].values():
        assert figures["peak_bytes"] >= figures["kept_bytes"]
    assert main(["memory", small, "--batch", "2", "--repeat", "3"]) == 0
    out = capsys.readouterr().out
    assert "warmed up first" in out and "min-max of 3" in out and "estimate peak" in out


def test_a_cuda_measurement_says_what_the_estimate_does_not_count() -> None:
    """On CUDA the allocator's peak holds cuDNN's workspaces (about 17 MB for an LSTM on an
    H200), which the estimate, counting the model's tensors, does not: the table and --json say
    so there, and nothing on the CPU, where both count tensors exactly."""
    import torch

    from revstudio.clicmd.memory import _table, estimate_note

    assert estimate_note(torch.device("cpu")) is None
    note = estimate_note(torch.device("cuda"))
    assert note is not None and "cuDNN" in note
    modes = {m: {"peak_bytes": 1000, "kept_bytes": 500, "seconds": 0.1} for m in ("standard", "reversible")}

    def table(device: str) -> str:
        return _table({"file": "x.revs", "batch": 4, "device": device, "precision": "fp32", "modes": modes,
                       "measured_with": "m", "estimate": {}, "estimate_note": estimate_note(torch.device(device))})

    assert note in table("cuda")
    assert "cuDNN" not in table("cpu")


def test_gradcheck_weights_come_from_the_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The fresh weights were drawn from torch's unseeded stream: the overflow graph failed in most
    # runs and passed (gradient norm 0) in some, with the same --seed. Now a run can be repeated.
    from revstudio.core.project import loads
    from revstudio.diagnostics.gradcheck import compare_modes

    graph = loads(json.dumps(OVERFLOW))
    torch.manual_seed(1)
    first = compare_modes(graph, batch=4, dtype="float32", seed=5).to_json()
    torch.manual_seed(2)
    state = torch.get_rng_state()
    again = compare_modes(graph, batch=4, dtype="float32", seed=5).to_json()
    assert json.dumps(first, sort_keys=True) == json.dumps(again, sort_keys=True)
    assert torch.equal(torch.get_rng_state(), state)  # the caller's stream is left as it was
    other = compare_modes(graph, batch=4, dtype="float32", seed=6).to_json()
    assert json.dumps(other, sort_keys=True) != json.dumps(first, sort_keys=True)


def test_the_documented_gradcheck_sample_is_what_the_command_prints(capsys: pytest.CaptureFixture[str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # docs/cli.md's sample kept numbers of an older build (gradient norm 7.736, other rows) for years.
    # Its lines must be the command's, in order ("..." skips rows); figures at rounding level (under
    # 1e-12: the errors, which differ with the CPU's vector width) are compared by size only.
    import re

    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    block = doc.split("$ revstudio gradcheck resources/examples/revnet_wired.revs\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(ROOT)  # (the sample's paths are the repository's)
    assert main(["gradcheck", "resources/examples/revnet_wired.revs"]) == 0
    out = capsys.readouterr().out.splitlines()

    def tidy(line: str) -> str:
        return re.sub(r"\d(?:\.\d+)?e-(1[3-9]|[2-9]\d)", "<tiny>", line)

    printed = [tidy(line) for line in out]
    at = 0
    for line in block.splitlines():
        if line.strip() == "...":
            continue
        assert tidy(line) in printed[at:], (line, out)
        at = printed.index(tidy(line), at) + 1
