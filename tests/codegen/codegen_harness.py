"""Runs an exported file where revstudio cannot be imported and compares it with ``revstudio.compile``.

``Harness.standalone`` writes the export, loads the compiled module's
``state_dict`` into the exported ``Model`` in a ``python -I`` subprocess whose
import system refuses ``revstudio``, runs every mode, and returns outputs and
gradients; ``reference`` does the same in-process with the compiled module,
through the very same step function, so the two can be compared bit for bit.
"""
from __future__ import annotations

import functools
import itertools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from script_zygote import run_forked

from revstudio.codegen import export
from revstudio.compiler import compile as rs_compile
from revstudio.core import generate
from revstudio.core.project import dumps, loads

# One step per mode: same seed, same loss, gradients of inputs and parameters.
# The text runs both in the child (standalone) and here (reference).
STEP = r'''
import torch


def region_structure(model):
    """Every region's steps (kind and slots) in module order: the exported model must build
    the same runtime objects as the compiled one (numbers alone could hide a drift)."""
    out = []
    for module in model.modules():
        regions = getattr(module, "_regions", None)
        if regions is None:
            regions = [v for k, v in vars(module).items() if k.startswith("_region_")]
        for region in regions:
            steps = [(type(s).__name__, tuple(s.consumes), tuple(s.produces), tuple(s.reads)) for s in region.steps]
            out.append((tuple(region.inputs), tuple(region.outputs), tuple(region.side), tuple(sorted(region.free)),
                        steps))
    return out


def run_modes(model, inputs, weights, modes, seed, train):
    results = {}
    model.train(train)
    for mode in modes:
        model.mode = mode
        model.zero_grad(set_to_none=True)
        xs = [x.clone().requires_grad_(x.is_floating_point()) for x in inputs]
        torch.manual_seed(seed)
        out = model(*xs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        loss = sum((o * w).sum() for o, w in zip(outs, weights))
        logdet = getattr(model, "logdet", None)  # a flow's log-determinant, trained with the outputs
        if logdet is not None:
            loss = loss - logdet.sum()
        loss.backward()
        rebuilt = []  # a model that is invertible end to end: its inverse too
        try:
            with torch.no_grad():
                back = model.inverse(*[o.detach() for o in outs])
            rebuilt = list(back) if isinstance(back, tuple) else [back]
        except (AttributeError, NotImplementedError):
            pass
        results[mode] = {
            "outputs": [o.detach().clone() for o in outs] + ([] if logdet is None else [logdet.detach().clone()])
            + rebuilt,
            "input_grads": [None if x.grad is None else x.grad.clone() for x in xs],
            "param_grads": {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None},
            "buffers": {n: b.clone() for n, b in model.named_buffers()},
        }
    return results
'''

# Installed in every child first: importing revstudio (even an installed copy) fails.
BLOCKER = r'''
import importlib.abc
import importlib.util
import sys


class _NoRevstudio(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "revstudio" or name.startswith("revstudio."):
            raise ImportError(f"revstudio must not be imported by an export (tried {name})")
        return None


sys.meta_path.insert(0, _NoRevstudio())
'''

DRIVER = STEP + BLOCKER + r'''
torch.set_num_threads(1)
# One child runs many exports (starting torch costs seconds): each line is "export io out".
with open(sys.argv[1], encoding="utf-8") as manifest:
    jobs = [line.rstrip("\n").split("\t") for line in manifest if line.strip()]
for number, (export_path, io_path, out_path) in enumerate(jobs):
    try:
        spec = importlib.util.spec_from_file_location(f"exported_model_{number}", export_path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        io = torch.load(io_path, weights_only=True)
        torch.manual_seed(io["seed"])
        fresh = module.Model()
        initial = {k: v.clone() for k, v in fresh.state_dict().items()}
        fresh.train(io["train"])
        with torch.no_grad():  # the first forward of a fresh model runs data-dependent init (ActNorm)
            first = fresh(*[x.clone() for x in io["inputs"]])
        first = list(first) if isinstance(first, tuple) else [first]
        model = module.Model()
        model.load_state_dict(io["state_dict"], strict=True)
        results = run_modes(model, io["inputs"], io["weights"], io["modes"], io["seed"], io["train"])
        results["__meta__"] = {
            "revstudio_imported": any(m == "revstudio" or m.startswith("revstudio.") for m in sys.modules),
            "modes": list(getattr(module, "MODES", ())),
            "state_keys": list(model.state_dict().keys()),
            "initial_state": initial,
            "first_outputs": first,
            "regions": region_structure(model),
        }
    except BaseException:
        import traceback

        results = {"__error__": traceback.format_exc()}
    torch.save(results, out_path)
'''


def _step(name: str = "run_modes") -> Callable[..., Any]:
    namespace: dict[str, Any] = {}
    exec(compile(STEP, "<step>", "exec"), namespace)
    return namespace[name]


def region_structure(model: Any) -> list[Any]:
    return _step("region_structure")(model)


class Harness:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp

    def reference(self, model: Any, io: dict[str, Any]) -> dict[str, Any]:
        # the child runs on one thread: reductions split over threads would round differently
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return _step()(model, io["inputs"], io["weights"], io["modes"], io["seed"], io["train"])
        finally:
            torch.set_num_threads(threads)

    def standalone(self, source: str, io: dict[str, Any], name: str = "exported") -> dict[str, Any]:
        return self.standalone_many({name: (source, io)})[name]

    def standalone_many(self, cases: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
        """Run several exports in one child process; returns each case's results by name."""
        lines = []
        for i, (source, io) in enumerate(cases.values()):
            path, io_path, out_path = (self.tmp / f"case{i}_{k}" for k in ("export.py", "io.pt", "out.pt"))
            path.write_text(source, encoding="utf-8")
            torch.save(io, io_path)
            lines.append(f"{path}\t{io_path}\t{out_path}")
        manifest, driver = self.tmp / "manifest.txt", self.tmp / "driver.py"
        manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
        driver.write_text(DRIVER, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env["OMP_NUM_THREADS"] = "1"
        proc = subprocess.run(
            [sys.executable, "-I", str(driver), str(manifest)],
            capture_output=True, text=True, cwd=self.tmp, env=env, timeout=600,
        )
        assert proc.returncode == 0, f"the standalone runner failed:\n{proc.stderr[-4000:]}"
        out = {}
        for i, name in enumerate(cases):
            result = torch.load(self.tmp / f"case{i}_out.pt", weights_only=True)
            assert "__error__" not in result, f"{name}: the exported file failed standalone:\n{result['__error__']}"
            out[name] = result
        return out


def assert_identical(ref: dict[str, Any], got: dict[str, Any]) -> None:
    """Bit-identical outputs, input gradients, parameter gradients and buffers in every mode."""

    for mode, expected in ref.items():
        actual = got[mode]
        for kind in ("outputs", "input_grads"):
            assert len(expected[kind]) == len(actual[kind]), (mode, kind)
            for i, (a, b) in enumerate(zip(expected[kind], actual[kind])):
                assert (a is None) == (b is None), (mode, kind, i)
                if a is not None:
                    assert a.dtype == b.dtype and a.shape == b.shape, (mode, kind, i)
                    assert torch.equal(a, b), f"{mode}: {kind}[{i}] differs by {(a - b).abs().max()}"
        for kind in ("param_grads", "buffers"):
            assert expected[kind].keys() == actual[kind].keys(), (mode, kind)
            for key, a in expected[kind].items():
                assert torch.equal(a, actual[kind][key]), f"{mode}: {kind} {key} differs"


MODES = ["reversible", "standard", "checkpoint"]


def make_io(model: Any, batch: int = 2, seed: int = 0, train: bool = True) -> dict[str, Any]:
    g = torch.Generator().manual_seed(seed)
    dtypes = {"float32": torch.float32, "float64": torch.float64}
    inputs = [torch.randn(batch, *op.shape, generator=g, dtype=dtypes.get(op.dtype, torch.float32))
              for op in sorted(model.plan.inputs, key=lambda o: o.index)]
    with torch.no_grad():
        probe = model(*[x.clone() for x in inputs])
    outs = probe if isinstance(probe, tuple) else (probe,)
    weights = [torch.randn(o.shape, generator=g, dtype=o.dtype) for o in outs]
    return {"state_dict": model.state_dict(), "inputs": inputs, "weights": weights, "modes": MODES,
            "seed": seed, "train": train}


class CompilerFailure(Exception):
    """``revstudio.compile`` itself cannot build or run the graph: not a question for the exporter."""


def prepare(graph: Any, seed: int, train: bool) -> tuple[str, dict[str, Any], Any]:
    """(source, io, compiled model with the same weights) of one graph."""
    torch.manual_seed(seed)
    try:
        model = rs_compile(graph, device="cpu")
        io = make_io(model, seed=seed, train=train)
    except Exception as exc:
        raise CompilerFailure(f"{type(exc).__name__}: {exc}") from exc
    source = export(graph)
    # a fresh compiled copy with the same weights, so both sides start from the same state
    model = rs_compile(graph, device="cpu")
    model.load_state_dict(io["state_dict"])
    return source, io, model


# ---- hostile project text ----------------------------------------------------

def evil_code(marker: Path) -> str:
    # relative: the tests run in the marker's folder (and names may hold at most 64 characters)
    return f"__import__('pathlib').Path({marker.name!r}).touch()"


def hostile_ids(marker: Path) -> list[str]:
    return [
        "x'\"\\", "class", '"""f"""', "'''g'''", "é日本💥", "None", "print", "self", "__init__",
        "forward", "Model", "REVSTUDIO_PROJECT", "torch", "nn", "F", "\\n\\r", "#comment", "a'''b\"\"\"c",
        "__import__('os')", "exec(chr(112))", "1st", "lambda:0", "\u0394x", "𝔘", "mode", "_region",
    ]


def renamed(graph: Any, ids: list[str], names: dict[str, str]) -> Any:
    """The same network with every node id, group name and name replaced by hostile text."""
    doc = json.loads(dumps(graph))
    pool = itertools.cycle(ids)
    suffix = itertools.count()
    group_names = {g: names["group"] + str(i) for i, g in enumerate(doc.get("groups", {}))}

    def rewrite(body: dict[str, Any]) -> None:
        mapping = {}
        for node in body["nodes"]:
            new = (next(pool) + str(next(suffix)))[:64]
            mapping[node["id"]] = new
            node["id"] = new
            for key, value in list(node.get("params", {}).items()):
                if key in ("group", "f", "g", "net") and value in group_names:
                    node["params"][key] = group_names[value]
            if node["type"] == "Output":
                node["params"]["name"] = names["output"]
        body["edges"] = [[mapping[a.rpartition(".")[0]] + "." + a.rpartition(".")[2],
                          mapping[b.rpartition(".")[0]] + "." + b.rpartition(".")[2]] for a, b in body["edges"]]

    rewrite(doc)
    groups = {}
    for old, body in doc.get("groups", {}).items():
        rewrite(body)
        groups[group_names[old]] = body
    doc["groups"] = groups
    doc["name"] = names["project"]
    return loads(json.dumps(doc))


def names_for(marker: Path) -> dict[str, str]:
    code = evil_code(marker)
    return {
        "project": f'evil"""\n{code}\n"""\'\'\'\\',
        "group": "g\"\"\"\\'\\'\\'\\#é💥class",
        "output": f"out\n{code}\r'''\u2028",
    }


def run_script(path: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python path args...`` as ``__main__`` in a child where revstudio cannot be imported: forked from
    a process that has imported torch (script_zygote.py), or started afresh where there is no fork."""
    code = BLOCKER + "import runpy\nsys.argv = sys.argv[1:]\nrunpy.run_path(sys.argv[0], run_name='__main__')\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["OMP_NUM_THREADS"] = "1"
    if sys.platform == "linux":
        return run_forked(code, [str(path), *args], cwd, env, timeout=600)
    return subprocess.run([sys.executable, "-I", "-c", code, str(path), *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600)


class Rows:
    """A training callback keeping every row (``train(..., callback=Rows())``), its other hooks idle."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def on_row(self, row: dict[str, Any]) -> None:
        self.rows.append(row)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("on_"):
            return lambda row: None
        raise AttributeError(name)


# A short run on ``d.npz``: 4 steps of 8, validated every 2, nothing else measured. The exported-script
# tests train a graph with it here and in the script, and compare the loss rows.
SECTION = {"data": "d.npz", "steps": 4, "batch_size": 8, "lr": 0.01, "log_every": 1, "val_every": 2,
           "gradcheck_every": 0, "memory_every": 0, "checkpoint_every": 0}


def with_section(graph: Any, **changes: Any) -> Any:
    """``graph`` with ``SECTION`` (``changes`` replacing its keys) as its training section."""
    graph.training = {**SECTION, **changes}
    return graph


def loss_rows(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(kind, step, loss, val_loss) of a run's step and validation rows: what two runs compare."""
    return [(r["kind"], r["step"], r.get("loss"), r.get("val_loss")) for r in rows if r["kind"] in ("step", "val")]


def script_rows(stdout: str) -> list[dict[str, Any]]:
    """The JSON rows an exported script printed with ``--json``."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def trained_here(graph: Any, folder: Path, **changes: Any) -> tuple[list[tuple[Any, ...]], Any]:
    """``revstudio train``'s loss rows (``loss_rows``) on ``graph``'s training section (``changes``
    replacing its keys), its data read from ``folder``; and the data it read."""
    from revstudio.diagnostics.check import full_check
    from revstudio.training.config import TrainConfig
    from revstudio.training.data import load_data
    from revstudio.training.loop import train
    from revstudio.training.task import infer_task

    cfg = TrainConfig.from_section({**graph.training, **changes})
    report = full_check(graph, batch=cfg.batch_size)
    data = load_data(cfg.data, graph, report, task=infer_task(graph, report), seed=cfg.seed, base_dir=str(folder),
                     scale_uint8=cfg.scale_uint8)
    rows = Rows()
    assert train(graph, report, cfg, data, callbacks=[rows]).status == "finished"
    return loss_rows(rows.rows), data


def script_and_here(graph: Any, folder: Path, name: str) -> tuple[list[dict[str, Any]], str, tuple[Any, Any]]:
    """``graph`` exported with its training script as ``folder/name`` and run there (``--json --out ck.pt``,
    revstudio not importable), then trained here by ``revstudio train``'s loop: the script's rows, what it
    said (stderr then stdout), and :func:`trained_here`'s (loss rows, data)."""
    from revstudio.codegen import export

    script = folder / name
    script.write_text(export(graph, with_training=True), encoding="utf-8")
    proc = run_script(script, ["--json", "--out", "ck.pt"], folder)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return script_rows(proc.stdout), proc.stderr + proc.stdout, trained_here(graph, folder)


@functools.cache
def _chain_source(wired: bool) -> str:
    return export(generate.revnet_chain(1, channels=4, size=4, wired=wired), with_training=True)


def chain_script(folder: Path, name: str = "train_model.py", wired: bool = True) -> Path:
    """``folder/name``: the training script of ``generate.revnet_chain(1, channels=4, size=4, wired=wired)``,
    the small network most exported-script tests run. The same text as exporting it in the test, exported
    once per test process (an export took 0.75 s of CPU; tests/codegen exported this chain 19 times)."""
    path = folder / name
    path.write_text(_chain_source(wired), encoding="utf-8")
    return path
