"""The exported file's layout: its sections in reading order, the docstring and the imports.

:func:`assemble` puts the classes :mod:`~revstudio.codegen.emit` wrote together
with the inlined layers and runtime and the embedded project, then writes the
header: the docstring that says how to use the file and only the imports its
body uses.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from revstudio import __version__

from .inline import STDLIB, ImportFact, import_block, unquote_annotations
from .model_api import BOUNDARY
from .namespace import docstring_text
from .notice import notice_comment
from .regions import STREAM_HELPER
from .training import inputs_constant, script_imports
from .training_options import MAIN_GUARD

if TYPE_CHECKING:
    from .emit import ClassCode, _Writer

MODES = ("reversible", "standard", "checkpoint")


def assemble(writer: _Writer, model_class: ClassCode, script: list[str] | None) -> str:
    """The whole file: header and imports, the model, its group classes, the inlined code, the project."""
    from revstudio.core.project import dumps
    from revstudio.core.pyfile import embed

    graph = writer.graph
    chunks = writer.inliner.ordered()
    checks = [text for module, text in chunks if module == BOUNDARY]
    runtime = [text for module, text in chunks if module.startswith("revstudio.compiler") and module != BOUNDARY]
    layers = [text for module, text in chunks if not module.startswith("revstudio.compiler")]
    # The network comes first, so a reader meets Model before the support code; the
    # classes below it are only needed when Model() is called, not when it is defined.
    parts = ["# ---- the network " + "-" * 68, f"MODES = {MODES!r}\n",
             inputs_constant([(op.name, op.shape, op.dtype)
                             for op in sorted(writer.plan.inputs, key=lambda o: o.index)]),
             "\n".join(model_class.lines) + "\n"]
    if writer.classes:
        parts.append("# ---- groups: one class per group body " + "-" * 47)
        parts += ["\n".join(cls.lines) + "\n" for cls in writer.classes.values()]
    with_training = script is not None
    if script is not None:
        parts += script
    if layers or runtime or checks:  # the licence asks its notice to travel with the copied code
        parts.append(notice_comment(__version__))
    if layers:
        parts.append("# ---- layers (verbatim from revstudio's torch-only node modules) " + "-" * 21)
        parts += layers
    if runtime:
        parts.append("# ---- reversible runtime (verbatim from revstudio.compiler.runtime and .assembly) " + "-" * 4)
        parts += runtime
    if checks:
        parts.append("# ---- what forward accepts (verbatim from revstudio.compiler.runtime_boundary) " + "-" * 8)
        parts += checks
    if writer.regions.stream is not None:  # regions pick their dtypes through region_dtypes
        parts.append(STREAM_HELPER.format(stream=writer.regions.stream))
    parts.append("# ---- the project, as data: `revstudio THIS_FILE.py` reopens it (read with ast, never run)\n"
                 + embed(dumps(graph)))
    if with_training:
        parts[-1] += MAIN_GUARD
    # a section's heading sits right on top of its first definition
    merged: list[str] = []
    for part in parts:
        if merged and merged[-1].startswith("# ---- ") and "\n" not in merged[-1].rstrip("\n"):
            merged[-1] = merged[-1].rstrip("\n") + "\n" + part
        else:
            merged.append(part)
    body = "\n\n".join(p.rstrip("\n") + "\n" for p in merged)
    if writer.inliner.future_annotations:  # an inlined plugin module brought the import
        body = unquote_annotations(body)
    header = _header(writer, with_training, body)
    return header + "\n" + body


def _distribution_of(package: str) -> str:
    """``revstudio_haar`` -> ``revstudio-haar (import revstudio_haar)``: what to pip install."""
    from importlib import metadata

    try:
        dists = metadata.packages_distributions().get(package, [])
    except Exception:  # damaged metadata: the import name still tells the reader something
        dists = []
    return f"{dists[0]} (import {package})" if dists else package


def _needs(writer: _Writer, kept: list[ImportFact]) -> str:
    """What the file needs besides Python: PyTorch, the plugins whose layers it imports, and
    what inlined plugin code imports beyond torch and the standard library (a sibling module
    of the plugin's, say, that does not travel with it: the file needs that plugin too)."""
    plugins = dict(writer.plugin_packages)
    others: dict[str, None] = {}
    inlined = {module.split(".")[0] for module, _text in writer.inliner.ordered()}
    for fact in kept:
        top = fact.module.split(".")[0]
        if top in STDLIB or top in ("torch", "__future__") or top in plugins:
            continue
        (plugins if top in inlined else others).setdefault(top, None)
    needs = "PyTorch"
    if plugins:
        needs += " and the plugin " + ", ".join(_distribution_of(p) for p in plugins)
    if others:
        needs += " and " + ", ".join(_distribution_of(p) for p in others)
    return needs


def _inverse_lines(writer: _Writer) -> list[str]:
    """The header's lines on ``inverse`` and ``logdet``, where the model has them: nothing at the
    top of the file said an invertible network's inverse is a method of the exported Model."""
    invertible, flow = writer.plan.invertible, bool(getattr(writer.model, "_flow_parts", ()))
    if not (invertible or flow):
        return []
    single = len(writer.plan.inputs) == 1 and len(writer.plan.outputs) == 1
    ins, outs = ("x", "z") if single else ("*inputs", "*outputs")
    lines = [f"    {outs.lstrip('*')} = model({ins})" + " " * (27 - len(outs + ins)) + "# one tensor per Input node"]
    if flow:
        lines.append("    log_det = model.logdet               # log|det J| per sample of that forward (flow layers)")
    if invertible:
        lines.append(f"    {ins.lstrip('*')} = model.inverse({outs})" + " " * (19 - len(outs + ins))
                     + "# rebuilt from the outputs (invertible end to end)")
    return lines


def _header(writer: _Writer, with_training: bool, body: str) -> str:
    name = docstring_text(writer.graph.name)
    facts = dict(writer.inliner.imports)
    facts.setdefault("torch", ImportFact("torch", "torch"))
    facts.setdefault("nn", ImportFact("nn", "torch", "nn"))
    if with_training:
        for fact in script_imports():
            facts.setdefault(fact.bound, fact)
    if any(extras.runs_parts for extras in writer.regions.extras.values()):
        facts.setdefault("Callable", ImportFact("Callable", "collections.abc", "Callable"))
    if writer.needs_any:
        facts.setdefault("Any", ImportFact("Any", "typing", "Any"))
    if writer.uses_math:
        facts.setdefault("math", ImportFact("math", "math"))
    used = {n.id for n in ast.walk(ast.parse(body)) if isinstance(n, ast.Name)}
    kept = [f for b, f in facts.items() if b in used]
    needs = _needs(writer, kept)
    doc = [
        f'"""{name}: exported from revstudio {__version__}; needs only {needs}.',
        "",
        "    model = Model()                      # same state_dict keys as revstudio.compile",
        "    checkpoint = torch.load(\"last.pt\", map_location=\"cpu\", weights_only=True)  # a run's checkpoints/last.pt",
        "    model.load_state_dict(checkpoint[\"model\"])",
        "    # or its weights alone, as `revstudio export RUN_DIR -o THIS_FILE.py` writes them beside it:",
        "    # model.load_state_dict(torch.load(\"THIS_FILE.pt\", weights_only=True))",
        "    model.eval()                         # inference: Dropout off, BatchNorm's running statistics",
        "    model.mode = \"standard\"              # or \"reversible\" / \"checkpoint\"",
        *_inverse_lines(writer),
        "",
        "Reopen the graph in revstudio with `revstudio THIS_FILE.py`.",
    ]
    if with_training:
        doc += ["Train it as `revstudio train` would (the project's training settings, every one an",
                "option): `python THIS_FILE.py --steps 200 --data synthetic`, or on several processes",
                "or machines with DDP: `torchrun --nproc_per_node 4 THIS_FILE.py ...`. Its checkpoint is",
                "revstudio's: `Model().load_state_dict(torch.load(path, map_location=\"cpu\", weights_only=True)[\"model\"])`."]
    doc.append('"""')
    return "\n".join(doc) + "\n" + import_block(kept, future_annotations=writer.inliner.future_annotations)
