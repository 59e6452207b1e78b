"""``revstudio export FILE -o OUT.onnx [--weights W] [--opset N]``: the network as an ONNX file.

The format follows ``-o``'s name, as the code export's does (``-o OUT.py``). The weights are a run
folder's last checkpoint, or ``--weights``'s, embedded in the file (no ``OUT.pt`` beside it). The
file is checked before it is written (:mod:`revstudio.codegen.onnx_export`). Exit codes: 0
written, 1 the graph or a layer cannot be exported, 2 bad usage, a missing package or an
unreadable/unwritable file.
"""
from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from revstudio.cli import CliError, json_text

SUFFIX = ".onnx"


def wanted(output: str) -> bool:
    """Whether ``-o output`` asks for ONNX: its name ends in .onnx (any case)."""
    return output.lower().endswith(SUFFIX)


def refuse_mixed(args: argparse.Namespace) -> None:
    """The options that belong to one format given with the other's ``-o``."""
    if getattr(args, "onnx", None) is not None:
        raise CliError(f"--onnx: the format follows -o's name; write ONNX with -o {args.onnx or 'OUT.onnx'}")
    if wanted(args.output) and args.with_training:
        raise CliError(f"--with-training: an ONNX file holds the network alone; write the training script "
                       f"with -o OUT.py --with-training, and the network with -o {args.output}")
    if not wanted(args.output) and args.opset is not None:
        raise CliError(f"--opset: it is for an ONNX file; name it -o OUT.onnx (-o {args.output} writes Python code)")


def run(args: argparse.Namespace, same_file: Callable[[str, str], bool]) -> int:
    """The ONNX export of ``args.file`` to ``args.output``; ``same_file(a, b)`` as export's."""
    from revstudio.codegen import CodegenError
    from revstudio.codegen.onnx_export import OnnxError, check_opset, export_onnx, require_packages

    from . import _export_weights as weights

    try:
        require_packages()
        opset = check_opset(args.opset)
    except OnnxError as exc:
        raise CliError(str(exc)) from None
    project, source, flag = weights.sources(args.file, args.weights)
    if project != args.file and same_file(args.output, project):
        raise CliError(f"{args.output}: the output would overwrite the project it exports; choose another -o path")
    from revstudio.training.runs import CHECKPOINT

    if source is not None and any(same_file(args.output, other)
                                  for other in (source, os.path.join(source, CHECKPOINT))):
        raise CliError(f"-o {args.output}: it would go over the file the weights are read from; choose another -o path")
    from .export import load_project

    graph = load_project(project)
    state, step = weights.fitting_weights(graph, source, flag, project) if source is not None else (None, None)
    try:
        done = export_onnx(graph, args.output, state=state, opset=opset)
    except CodegenError as exc:  # the graph's errors, a layer ONNX lacks, an untrained ActNorm, a mismatch
        from .export import _fail

        return _fail(args, exc, f"cannot export {args.file} as ONNX:")
    except OSError as exc:
        raise CliError(f"{args.output}: cannot write ({exc.strerror or exc}); check the folder exists and is "
                       "writable") from None
    if source is not None:  # the run's detail and runs --json name its latest export, as for code
        from .export import _record

        _record(source, done.path, None, step)
    if args.json:
        print(json_text({"ok": True, "output": done.path, "format": "onnx", "inputs": list(done.inputs),
                         "outputs": list(done.outputs), "opset": done.opset, "max_abs_diff": done.max_abs_diff,
                         "weights_from": source}))
        return 0
    trained = f", the trained weights of {source}" if source is not None else ", freshly initialised weights"
    print(f"wrote {done.path} (ONNX opset {done.opset}{trained})")
    print(f"  inputs: {', '.join(done.inputs)}; outputs: {', '.join(done.outputs)} (the first axis, the batch, "
          "takes any size)")
    if done.max_abs_diff is None:
        print("  onnxruntime is not installed: the file was checked with onnx.checker only (pip install "
              "onnxruntime to compare its outputs with the compiled module's)")
    else:
        print(f"  checked with onnxruntime: max abs difference {done.max_abs_diff:.2g} against the compiled "
              "module (batches of 1 and 5)")
    half = _half_precision(source) if source is not None else None
    if half is not None:
        from revstudio.diagnostics.estimate import input_dtype

        print(f"  note: the run trained at precision {half}, autocast over {input_dtype(graph)} weights: the file "
              f"is {input_dtype(graph)}, as they are (no bfloat16 ONNX file is written: onnxruntime's CPU provider "
              "runs none)")
    return 0


def _half_precision(source: str) -> str | None:
    """``bf16`` or ``fp16`` where the weights are a run's (its folder, or a checkpoint in its folder) that
    trained at that precision; else None."""
    from revstudio.training.runs import CONFIG, read_json

    folder = source if os.path.isdir(source) else os.path.dirname(os.path.dirname(os.path.abspath(source)))
    config = read_json(os.path.join(folder, CONFIG))
    precision = config.get("precision") if isinstance(config, dict) else None
    return precision if precision in ("bf16", "fp16") else None
