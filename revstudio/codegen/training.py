"""The training script of an export (``--with-training``): ``revstudio train`` in one torch-only file.

The script's ``main()`` trains ``Model`` as ``revstudio train`` would: the project's
``training`` section is embedded (every key, as ``TRAINING``) and each key has an
argparse override; the data code is ``revstudio.training.sources`` and
``.synthetic`` copied verbatim (same files read, same synthetic tensors for the
same seed, same refusals); the schedule and the loss are
``revstudio.training.parts.lr_factor`` and ``Loss`` copied verbatim; the data
order, the optimizers and the checkpoint dict (CONTRACTS section 4) follow
``revstudio.training.loop``. Launched by ``torchrun`` (``WORLD_SIZE`` > 1) it
joins the process group and trains with DistributedDataParallel on the global
batch, split over the ranks; only rank 0 prints and writes.
"""
from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Sequence
from typing import Any

from .inline import ImportFact
from .training_loop import LOOP, LOOP_IMPORTS


def inputs_constant(inputs: Sequence[tuple[str, Sequence[int], str]]) -> str:
    """``INPUTS = {node id: (shape, dtype)}``: ids through ``repr``, dtypes from a closed set."""
    allowed = {"float32", "float64", "float16", "bfloat16"}
    rows = []
    for node_id, shape, dtype in inputs:
        dt = dtype if dtype in allowed else "float32"
        rows.append(f"    {node_id!r}: ({tuple(int(s) for s in shape)!r}, torch.{dt}),")
    return "INPUTS = {\n" + "\n".join(rows) + "\n}\n"


def script_imports() -> list[ImportFact]:
    """Every import the training script's code needs: the loop's, and the top-level imports of
    the modules it copies (``data_modules()`` and ``parts``; revstudio's own left out)."""
    from revstudio.training import parts

    facts = list(LOOP_IMPORTS)
    for module in (*data_modules(), parts):
        for stmt in ast.parse(inspect.getsource(module)).body:
            if isinstance(stmt, ast.Import):
                facts += [ImportFact(a.asname or a.name.split(".")[0], a.name if a.asname else a.name.split(".")[0])
                          for a in stmt.names]
            elif isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module not in (None, "__future__") \
                    and not (stmt.module or "").startswith("revstudio"):
                facts += [ImportFact(a.asname or a.name, str(stmt.module), a.name) for a in stmt.names]
    return facts


def data_modules() -> tuple[Any, ...]:
    """The data code the script copies verbatim, in the order it is copied (a module after those it uses)."""
    from revstudio.training import (
        arrays,
        data_checks,
        data_hints,
        data_notes,
        label_fit,
        mapped,
        sources,
        steps,
        synthetic,
    )

    return synthetic, mapped, data_notes, label_fit, data_checks, steps, arrays, sources, data_hints


def _verbatim(module: Any) -> str:
    """A module's code without its docstring, ``__future__`` and import lines, and without the
    function-local ``import torch`` (the script imports torch once at the top)."""
    source = inspect.getsource(module)
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    drop: set[int] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) or (
                isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)):
            drop.update(range(stmt.lineno - 1, (stmt.end_lineno or stmt.lineno)))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and [a.name for a in node.names] == ["torch"] and node.col_offset:
            drop.add(node.lineno - 1)
            if node.lineno < len(lines) and not lines[node.lineno].strip():
                drop.add(node.lineno)  # the blank line after it
    kept = "".join(line for i, line in enumerate(lines) if i not in drop)
    return re.sub(r"\n{3,}", "\n\n\n", kept).strip("\n") + "\n"


def _copied_parts() -> str:
    """``LN2``, ``lr_factor``, ``dequantize``, ``noise_seed`` and ``Loss`` of revstudio.training.parts, verbatim."""
    from revstudio.training import parts

    return "\n\n".join(["LN2 = math.log(2.0)\n", inspect.getsource(parts.lr_factor),
                        inspect.getsource(parts.dequantize), inspect.getsource(parts.noise_seed),
                        inspect.getsource(parts.Loss)])


def _copied_divergence() -> str:
    """``START_STEPS``, ``FACTOR``, ``DivergenceWatch`` and ``_number`` of revstudio.training.divergence,
    verbatim: the script warns of a diverging loss by the very rule ``revstudio train`` uses."""
    from revstudio.training import divergence

    return "\n\n".join([f"START_STEPS = {divergence.START_STEPS!r}\nFACTOR = {divergence.FACTOR!r}\n",
                        inspect.getsource(divergence.DivergenceWatch), inspect.getsource(divergence._number)])


def _copied_learning() -> str:
    """The constants, ``check_step``, ``LearningWatch`` and the words of revstudio.training.learning,
    verbatim: the script tells a run that is not learning by the very rule ``revstudio train`` uses."""
    from revstudio.training import learning

    constants = "".join(f"{name} = {getattr(learning, name)!r}\n"
                        for name in ("MIN_STEPS", "MAX_STEPS", "LOSS_STEPS", "ACC_STEPS", "FALL", "SIGMAS", "UNCHECKED"))
    return "\n\n".join([constants] + [inspect.getsource(fn) for fn in (
        learning.check_step, learning.LearningWatch, learning._numbers, learning._pair,
        learning.not_learning_message, learning.unchecked_note)])


def _copied_patience() -> str:
    """``Patience``, ``early_words`` and the refusal of a resume that would stop again at once, of
    revstudio.training.patience, verbatim: the script stops early by the very rule ``revstudio train``
    uses, and says so in its words."""
    from revstudio.training import patience

    return "\n\n".join(inspect.getsource(fn) for fn in (patience.Patience, patience.early_words,
                                                         patience.early_stop_facts, patience.early_reason,
                                                         patience.resume_refusal))


def _copied_resume() -> str:
    """``data_changed``, ``data_changed_note``, ``schedule_note`` and ``device_changed_note`` of
    revstudio.training.checkpoint and ``threads_changed_note`` of .threads, verbatim: a resumed script
    tells of changed data, of a schedule re-planned over a new length, of another CPU thread count and
    of another device, by the very rules and words ``revstudio train --resume`` uses."""
    from revstudio.training import checkpoint, threads

    return "\n\n".join(inspect.getsource(fn) for fn in (checkpoint.data_changed, checkpoint.data_changed_note,
                                                         checkpoint.schedule_note, threads.threads_changed_note,
                                                         checkpoint.device_changed_note))


def _copied_init() -> str:
    """The words of revstudio.training.init_words, ``bare_state_dict`` of .checkpoint and
    ``state_mismatch`` of revstudio.diagnostics.gradcheck, verbatim: the script's ``--init`` takes
    the files ``revstudio train --init`` takes and refuses the same weights in the same words."""
    from revstudio.diagnostics import gradcheck
    from revstudio.training import checkpoint, init_words

    return "\n\n".join([f"OWN_WEIGHTS = {init_words.OWN_WEIGHTS!r}\nINIT_AND_RESUME = {init_words.INIT_AND_RESUME!r}\n"
                         f"INIT_HELP = {init_words.INIT_HELP!r}\nKEYS_SHOWN = {gradcheck.KEYS_SHOWN!r}\n"] + [inspect.getsource(fn) for fn in (
        init_words.no_init_file, init_words.init_misfit, checkpoint.bare_state_dict, gradcheck.state_mismatch,
        gradcheck._names)])


def _literal(value: Any) -> str:
    """A Python literal of JSON-like data (strings through ``repr``, so nothing becomes code)."""
    text = repr(value)
    ast.literal_eval(text)  # the check that it is data only
    return text


def training_constants(graph: Any, report: Any, section: dict[str, Any] | None,
                       input_order: Sequence[str], output_order: Sequence[str]) -> str:
    """``EXPORTED_BY``, ``TRAINING`` (every key), ``TASKS`` and ``INPUT_SPECS`` of the script."""
    from revstudio import __version__
    from revstudio.training.config import ConfigError, TrainConfig
    from revstudio.training.data import input_specs
    from revstudio.training.task import TASKS, DataError, find_type, infer_task

    from . import CodegenError

    try:
        config = TrainConfig.from_section(graph.training if section is None else section).full_section()
        infer_task(graph, report, config["task"])
    except (ConfigError, DataError) as exc:
        raise CodegenError(f"{graph.name}: the training section does not fit: {exc}") from None
    specs = input_specs(graph, report)
    ordered = {node: specs[node] for node in input_order}
    tasks: dict[str, Any] = {}
    for requested in TASKS:  # every --task choice, resolved here (the script has no graph to read)
        try:
            task = infer_task(graph, report, requested)
        except DataError as exc:
            tasks[requested] = str(exc)  # refused when chosen, with revstudio's reason
            continue
        tasks[requested] = {
            "kind": task.kind, "num_classes": task.num_classes, "output_id": task.output_id,
            "output_index": list(output_order).index(task.output_id), "head_id": task.head_id,
            "output_shape": list(task.output_shape), "requested": task.requested,
            "sequence": find_type(graph, ("BiRNN",)) is not None,
        }
    from revstudio.diagnostics.coupling_init import identity_start_advice

    advice = identity_start_advice(graph)  # a flow's couplings to zero-initialise, for a diverged loss
    spec_rows = "\n".join(f"    {node!r}: ({tuple(shape)!r}, {dtype!r})," for node, (shape, dtype) in ordered.items())
    config_rows = "\n".join(f"    {key!r}: {_literal(value)}," for key, value in config.items())
    task_rows = "\n".join(f"    {key!r}: {_literal(value)}," for key, value in tasks.items())
    return (f"EXPORTED_BY = {_literal(__version__)}\n"
            "# the project's training section, every key (argparse options override them)\n"
            f"TRAINING: dict[str, Any] = {{\n{config_rows}\n}}\n"
            "# what revstudio resolved from the graph for each --task: its loss, the Output it reads\n"
            f"TASK_NAMES = {_literal(TASKS)}\n"
            f"TASKS: dict[str, Any] = {{\n{task_rows}\n}}\n"
            "# Input node id -> (shape, dtype), in Model's argument order\n"
            f"INPUT_SPECS: dict[str, tuple[tuple[int, ...], str]] = {{\n{spec_rows}\n}}\n"
            "# what a flow whose loss diverges should change in the project (said with the warning)\n"
            f"DIVERGED_ADVICE = {_literal(advice)}\n")


def training_parts(graph: Any, report: Any, section: dict[str, Any] | None, input_order: Sequence[str],
                   output_order: Sequence[str]) -> list[str]:
    """The script's sections, in order (each starts with its ``# ----`` heading)."""
    return [
        "# ---- training settings " + "-" * 62 + "\n" + training_constants(graph, report, section, input_order,
                                                                           output_order),
        "# ---- data (verbatim from revstudio.training."
        + ", .".join(m.__name__.rsplit(".", 1)[1] for m in data_modules()) + ")\n"
        + "\n\n".join(_verbatim(m) for m in data_modules()),
        "# ---- schedule and loss (verbatim from revstudio.training.parts) " + "-" * 21 + "\n" + _copied_parts(),
        "# ---- divergence watch (verbatim from revstudio.training.divergence) " + "-" * 17 + "\n"
        + _copied_divergence(),
        "# ---- not-learning watch (verbatim from revstudio.training.learning) " + "-" * 18 + "\n"
        + _copied_learning(),
        "# ---- early stopping (verbatim from revstudio.training.patience) " + "-" * 20 + "\n"
        + _copied_patience(),
        "# ---- resumed on other data (verbatim from revstudio.training.checkpoint) " + "-" * 12 + "\n"
        + _copied_resume(),
        "# ---- starting from weights of one's own (verbatim from revstudio's --init) " + "-" * 11 + "\n"
        + _copied_init(),
        "# ---- the training loop (as revstudio.training.loop) " + "-" * 32 + "\n" + LOOP.strip("\n") + "\n",
    ]


def top_level_names() -> set[str]:
    """Names the training code defines at module level (reserved so no generated class takes one)."""
    names: set[str] = set()
    for text in (*(inspect.getsource(m) for m in data_modules()), _copied_parts(), _copied_divergence(), _copied_learning(), _copied_resume(),
                 _copied_patience(), _copied_init(), LOOP):
        for stmt in ast.parse(text).body:
            if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
                names.add(stmt.name)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names | {"EXPORTED_BY", "TRAINING", "TASK_NAMES", "TASKS", "INPUT_SPECS", "DIVERGED_ADVICE"}

