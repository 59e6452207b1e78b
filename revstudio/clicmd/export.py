"""``revstudio export FILE -o OUT.py [--weights W] [--with-training]``: write standalone PyTorch code
(``-o OUT.onnx [--opset N]``: the network as an ONNX file, :mod:`.export_onnx`).

The output needs only torch, defines ``class Model(nn.Module)`` with the same
``state_dict`` keys as ``revstudio.compile``, and embeds the project so that
``revstudio OUT.py`` reopens it. A run folder as FILE (or ``--weights``) also writes the trained
weights beside the code, ``OUT.pt`` (:mod:`._export_weights`). Exit codes: 0 written, 1 the graph has
errors, 2 bad usage or an unreadable/unwritable file.
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
from typing import Any

from revstudio.cli import CliError, json_text, message_line, printable, reader_gone


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="a project (.revs), an earlier export (.py), or a training "
                                                     "run's folder (its project, and its trained weights as OUT.pt)")
    parser.add_argument("-o", "--output", metavar="OUT.py", required=True,
                        help="where to write the code; a name ending in .onnx writes the network as an ONNX file "
                             "instead (inputs and outputs named after the nodes, any batch size; checked with "
                             "onnxruntime where installed)")
    parser.add_argument("--weights", metavar="WEIGHTS",
                        help="also write these trained weights beside the code as OUT.pt, a plain state_dict "
                             "Model() loads: a run folder, a revstudio checkpoint or a state_dict file")
    parser.add_argument(
        "--with-training",
        action="store_true",
        help="add a training script: main() trains like `revstudio train` (the project's training "
             "settings as argparse options, the same data sources and checkpoints; torchrun for DDP)",
    )
    parser.add_argument("--opset", type=int, metavar="N",
                        help="with -o OUT.onnx: the ONNX opset to write (torch's default where left out)")
    parser.add_argument("--onnx", nargs="?", const="", help=argparse.SUPPRESS)  # refused: -o names the format
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def run(args: argparse.Namespace) -> int:
    from revstudio.codegen import CodegenError, export, relocated_training, write_source

    if not args.output:
        raise CliError("-o: the output path is empty; name the .py file to write, e.g. -o model.py")
    if args.output == "-":  # elsewhere standard output; here it would be a file named '-' (FILE too is a path)
        raise CliError("-o -: revstudio writes to paths only; use -o /dev/stdout to send the code to standard "
                       "output, or -o ./- for a file named '-'")
    if _same_file(args.output, args.file):
        raise CliError(f"{args.output}: the output would overwrite the input; choose another -o path")
    if os.path.isfile(args.output) and not os.access(args.output, os.W_OK):
        # the write renames a new file over it, which the folder's permissions allow: refuse as cp does
        raise CliError(f"{args.output}: the file is read-only; make it writable (chmod u+w) or choose another -o path")
    from . import export_onnx

    export_onnx.refuse_mixed(args)
    if export_onnx.wanted(args.output):
        return export_onnx.run(args, _same_file)
    from . import _export_weights as weights

    project, source, flag = weights.sources(args.file, args.weights)
    if project != args.file and _same_file(args.output, project):  # (a run folder's project.revs)
        raise CliError(f"{args.output}: the output would overwrite the project it exports; choose another -o path")
    target = weights.weights_path(args.output) if source is not None else None
    if source is not None and target is not None:
        weights.refuse_output(args.output, target, source, project)
    graph = load_project(project)
    # relative data paths start from the output's folder, for its script and when it is reopened
    # (a pipe or device, `-o /dev/stdout`, has no folder of its own: they stay as they are)
    if not os.path.exists(args.output) or os.path.isfile(args.output):
        graph.training = relocated_training(graph.training, project, args.output)
    try:
        code = export(graph, with_training=args.with_training)
    except CodegenError as exc:
        return _fail(args, exc)
    state, step = weights.fitting_weights(graph, source, flag, project) if source is not None else (None, None)
    fresh = target is not None and not os.path.exists(target)
    if state is not None and target is not None:
        try:
            weights.write(state, target)
        except OSError as exc:
            raise CliError(f"{target}: cannot write the trained weights ({exc.strerror or exc}); check the "
                           "folder exists and is writable") from None
    try:
        write_source(code, args.output)
    except OSError as exc:
        if fresh and target is not None:  # no weights left behind without their code
            with contextlib.suppress(OSError):
                os.remove(target)
        if exc.errno == errno.EPIPE:  # `-o /dev/stdout | head`: the reader went away; quiet, as cat is
            return reader_gone()
        raise CliError(f"{args.output}: cannot write ({exc.strerror or exc}); check the folder exists and is writable") from None
    lines = code.count("\n")
    if source is not None and os.path.isfile(args.output):
        _record(source, args.output, target, step)
    if args.json:  # where the code itself went to stdout (-o /dev/stdout), the object goes beside it
        print(json_text({"ok": True, "output": args.output, "lines": lines, "with_training": args.with_training,
                         "weights": target, "weights_from": source}),
              file=sys.stderr if _is_stdout(args.output) else sys.stdout)
    elif not os.path.isfile(args.output):  # a device or pipe (/dev/stdout): nothing to import or reopen
        print(f"wrote {lines} lines to {args.output}", file=sys.stderr)
    else:
        extra = " with a training script" if args.with_training else ""
        print(f"wrote {args.output} ({lines} lines){extra}")
        if target is not None:
            print(f"wrote {target}: the trained weights of {source}")
        if args.output.endswith(".py"):
            print(f"  use it: {weights.use_line(_module_name(args.output), target)}" if target is not None
                  else f"  use it: from {_module_name(args.output)} import Model; model = Model()")
            print(f"  reopen it: revstudio {args.output}")
        else:  # Python imports, and revstudio reopens, only a .py file as Python
            print("  name it *.py to import it (from NAME import Model) or to reopen it with revstudio")
    return 0


def _fail(args: argparse.Namespace, exc: Exception, headline: str | None = None) -> int:
    """Exit 1 with the export's problems: one JSON object, or ``headline`` and a line per problem."""
    problems = list(getattr(exc, "problems", ()) or [str(exc)])
    if args.json:
        print(json_text({"ok": False, "error": str(exc), "problems": problems, "exit_code": 1}))
    else:
        print(message_line(headline or f"cannot export {args.file}; fix these first:"), file=sys.stderr)
        for problem in problems:
            print(printable(f"  {problem}"), file=sys.stderr)
    return 1


def _is_stdout(path: str) -> bool:
    """Whether ``path`` is this process's standard output (``/dev/stdout``, ``/dev/fd/1``, its pipe)."""
    try:
        here, there = os.fstat(sys.stdout.fileno()), os.stat(path)
    except (OSError, ValueError, AttributeError):  # no real stdout (tests, embedding)
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _same_file(output: str, source: str) -> bool:
    """Whether writing ``output`` may replace ``source``: the same path, a link to it (the write
    follows links), or the same file reached another way (a bind mount, a hard link)."""
    if os.path.realpath(output) == os.path.realpath(source):
        return True
    try:
        return os.path.samefile(output, source)
    except OSError:  # one of them is not there (yet)
        return False


def _module_name(path: str) -> str:
    stem = os.path.splitext(os.path.basename(path))[0]
    return stem if stem.isidentifier() else "model"


def _record(source: str, output: str, target: str | None, step: int | None) -> None:
    """Note the export in the run folder its weights came from (the Runs tab's detail and ``runs --json``
    show it); one that cannot be written is said on stderr, the export itself stands."""
    from revstudio.training.checkpoint import weights_file
    from revstudio.training.run_exports import record_export, run_of

    run = run_of(source)
    problem = record_export(run, output, target, step, weights_file(source)) if run is not None else None
    if problem:
        print(f"note: {problem}", file=sys.stderr)


def load_project(project: str) -> Any:
    """The graph of ``project``; a CliError (exit 2) naming the file, with the example hint, where it
    cannot be read or is not a project (the code and the ONNX export alike)."""
    from revstudio.core.project import ProjectError, cannot_read, load

    from ._paths import example_hint

    try:
        return load(project)
    except ProjectError as exc:
        raise CliError(f"{exc}{example_hint(project)}") from None
    except OSError as exc:
        raise CliError(f"{cannot_read(project, exc.strerror or str(exc))}{example_hint(project)}") from None
