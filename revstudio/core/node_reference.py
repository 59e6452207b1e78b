"""The node reference: what a user reads about a node type, from its one declaration.

``revstudio nodes``, docs/nodes.md and the app's palette tooltip and inspector all render a
type's entry with the functions here, so they never disagree: the ports, each parameter
(kind, default, allowed values, meaning: the ``Param`` itself), the shape rule in words
(``NodeSpec.shape_rule``), whether it is invertible, what its backward keeps
(``NodeSpec.memory_note``, else what ``saved_for_backward`` declares) and an example run
through the type's own ``infer``. Torch-free and Qt-free.
"""
from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from .params import GroupRef, Param, ParamError
from .shapes import fmt_shape
from .spec import InferContext, NodeSpec, Registry, SavedTensors, ShapeT

DOC_TITLE = "# Node reference"


def summary(spec: NodeSpec) -> str:
    """The first sentence of the type's help: its one-line description."""
    text = " ".join(spec.help.split())
    for match in re.finditer(r"[.;] ", text):
        head = text[: match.start()]
        if not head.endswith(("e.g", "i.e", "etc")):  # an abbreviation's dot ends no sentence
            return head + "."
    return text


def value_text(value: Any) -> str:
    """A parameter value as a project file writes it (``true``, ``[3, 32, 32]``, ``"lstm"``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def param_facts(param: Param) -> dict[str, Any]:
    """One parameter as the reference and the inspector's field tooltip say it: its kind, its
    default (as a file writes it), the values allowed and what it means."""
    options = getattr(param, "options", None)
    return {"kind": param.kind, "default": value_text(param.default), "allowed": param.describe(),
            "options": list(options) if options else None, "meaning": param.help}


def _is_builtin(spec: NodeSpec, registry: Registry) -> bool:
    provider = registry.provider(spec.type_id)
    return bool(provider is None or provider.builtin)


def _provider(spec: NodeSpec, registry: Registry) -> str | None:
    provider = registry.provider(spec.type_id)
    if provider is None or provider.builtin:
        return None
    return provider.distribution or provider.value


def ports_text(spec: NodeSpec, inputs: bool) -> str:
    """The type's input or output ports with its default parameters, and how they vary."""
    rule = spec.inputs if inputs else spec.outputs
    try:
        ports = spec.input_ports(spec.defaults()) if inputs else spec.output_ports(spec.defaults())
    except Exception:  # a rule that needs a project's groups: said in words below
        ports = ()
    if not callable(rule):
        return ", ".join(ports) or "none"
    if not ports:
        return f"from the group: its {'GroupInput' if inputs else 'GroupOutput'} nodes' port names"
    return ", ".join(ports) + " by default (the number follows the parameters)"


def memory_text(spec: NodeSpec) -> str:
    """What the type's backward keeps, in words: the declaration's note, else what its
    ``saved_for_backward`` declares, else that it is undeclared."""
    if spec.memory_note:
        return spec.memory_note
    rule = spec.saved_for_backward
    if rule is None and not spec.layout_only:
        return "not declared: the memory estimate assumes it keeps every input and marks it approximate."
    if callable(rule):
        return "depends on its parameters and shapes (declared in its saved_for_backward rule)."
    saved = spec.saves_for_backward({}, (), ()) or SavedTensors()
    kept = [f"its {'input' if p.startswith('in') else 'output'} {p!r}" for p in saved.ports]
    if saved.values or saved.flags or saved.indices:
        kept.append("tensors of its own")
    return ("keeps " + " and ".join(kept) + " for backward.") if kept else "keeps nothing for backward."


def _example_shapes(spec: NodeSpec, params: Mapping[str, Any],
                    shapes: tuple[ShapeT, ...]) -> dict[str, ShapeT] | None:
    """The example's output shapes from the type's own ``infer`` (None: it needs a group body)."""
    if any(isinstance(p, GroupRef) for p in spec.params.values()):
        return None
    try:
        ports = spec.input_ports(params)
        ctx = InferContext(node_id="example", params=params, inputs=dict(zip(ports, shapes)))
        return spec.infer(ctx)
    except Exception:  # a plugin's example its infer refuses: shown without outputs
        return None


def example(spec: NodeSpec) -> dict[str, Any] | None:
    """The type's first declared example: the parameters it sets, its input shapes and the
    output shapes ``infer`` gives them (None where a group body decides them)."""
    if not spec.examples:
        return None
    raw_params, raw_shapes = spec.examples[0]
    params = spec.defaults()
    for name, value in dict(raw_params).items():
        param = spec.params.get(name)
        try:
            params[name] = param.validate(value) if param is not None else value
        except ParamError:
            params[name] = value
    shapes = tuple(tuple(s) for s in raw_shapes)
    outputs = _example_shapes(spec, params, shapes)
    return {"params": {k: value_text(v) for k, v in dict(raw_params).items()},
            "inputs": [list(s) for s in shapes],
            "outputs": None if outputs is None else {p: list(s) for p, s in outputs.items()}}


def example_text(spec: NodeSpec) -> str | None:
    found = example(spec)
    if found is None:
        return None
    params = ", ".join(f"{k}={v}" for k, v in found["params"].items())
    call = f"{spec.type_id}({params})"
    shape = " and ".join(fmt_shape(tuple(s)) for s in found["inputs"])
    if found["outputs"] is None:
        tail = "gives what its group bodies give (they must fit the shape rule)"
    elif not found["outputs"]:
        tail = "hands it out as the model's result"
    else:
        tail = "gives " + ", ".join(f"{p} {fmt_shape(tuple(s))}" for p, s in found["outputs"].items())
    return f"{call} on {shape} {tail}" if found["inputs"] else f"{call} {tail}"


def overview_row(spec: NodeSpec, registry: Registry) -> dict[str, Any]:
    """One line of ``revstudio nodes``: type, category, summary, invertible, built-in or whose."""
    return {"type": spec.type_id, "title": spec.display_name, "category": spec.category,
            "summary": summary(spec), "invertible": spec.invertible,
            "builtin": _is_builtin(spec, registry), "plugin": _provider(spec, registry)}


def entry(spec: NodeSpec, registry: Registry) -> dict[str, Any]:
    """The full entry of one type (the object ``revstudio nodes TYPE --json`` prints per type)."""
    return {**overview_row(spec, registry), "help": " ".join(spec.help.split()),
            "legacy_ids": list(spec.legacy_ids),
            "inputs": ports_text(spec, True), "outputs": ports_text(spec, False),
            "parameters": {name: param_facts(p) for name, p in spec.params.items()},
            "shape_rule": spec.shape_rule or None, "memory": memory_text(spec),
            "example": example(spec)}


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else text + "."


def _invertible_words(spec: NodeSpec) -> str:
    return ("yes: it can sit inside a reversible region, which rebuilds its input in backward instead of keeping it"
            if spec.invertible else "no")


def brief(spec: NodeSpec) -> str:
    """What the inspector shows under a selected node: the help, the shape rule, whether it is
    invertible and what it keeps (its parameters have the form's own fields)."""
    lines = [" ".join(spec.help.split())]
    if spec.shape_rule:
        lines.append(f"Shapes: {_sentence(spec.shape_rule)}")
    lines.append(f"Invertible: {_invertible_words(spec)}.")
    lines.append(f"Memory: {memory_text(spec)}")
    return "\n".join(lines)


def text(spec: NodeSpec, registry: Registry) -> str:
    """The full entry as plain text: ``revstudio nodes TYPE`` and the palette's tooltip."""
    row = overview_row(spec, registry)
    whose = "built-in" if row["builtin"] else f"plugin {row['plugin']}"
    lines = [f"{spec.display_name} ({spec.category}, {whose})", brief(spec),
             f"Inputs: {ports_text(spec, True)}", f"Outputs: {ports_text(spec, False)}"]
    if spec.params:
        lines.append("Parameters:")
        for name, param in spec.params.items():
            facts = param_facts(param)
            lines.append(f"  {name} ({facts['kind']}, default {facts['default']}; {facts['allowed']}): "
                         f"{facts['meaning']}")
    else:
        lines.append("Parameters: none")
    found = example_text(spec)
    if found:
        lines.append(f"Example: {found}")
    return "\n".join(lines)


def closest(name: str, type_ids: Iterable[str]) -> list[str]:
    """The type ids a mistyped ``name`` most likely meant (case ignored), best first."""
    ids = list(type_ids)
    lowered = {t.lower(): t for t in ids}
    found = difflib.get_close_matches(name.lower(), list(lowered), n=3, cutoff=0.5)
    return [lowered[f] for f in found]


def _md_cell(value: str) -> str:
    return value.replace("|", "\\|")


def markdown(registry: Registry) -> str:
    """docs/nodes.md: an index table, then every built-in type's full entry (installed plugins'
    types are left out, so the file is the same on every machine)."""
    specs = [spec for spec in registry if _is_builtin(spec, registry)]
    lines = [DOC_TITLE, "",
             "Every built-in node type, as `revstudio nodes TYPE` prints it and the editor's palette "
             "and inspector show it: all of it comes from the type's one declaration in "
             "`revstudio/nodes/`. Installed plugins add their own types: `revstudio nodes` lists them. "
             "Shapes leave out the batch axis; the channel axis is the first one.", "",
             "This file is generated: `REVSTUDIO_UPDATE_DOCS=1 pytest tests/core/test_node_reference.py` "
             "rewrites it after a declaration changes.", "",
             "| type | category | invertible | summary |", "|---|---|---|---|"]
    for spec in specs:
        anchor = spec.type_id.lower()
        lines.append(f"| [{spec.type_id}](#{anchor}) | {spec.category} | {'yes' if spec.invertible else 'no'} | "
                     f"{_md_cell(summary(spec))} |")
    for spec in specs:
        lines += ["", f"## {spec.type_id}", "", " ".join(spec.help.split()), ""]
        if spec.shape_rule:
            lines.append(f"- **Shapes:** {_sentence(spec.shape_rule)}")
        lines.append(f"- **Invertible:** {_invertible_words(spec)}.")
        lines.append(f"- **Memory:** {memory_text(spec)}")
        lines.append(f"- **Inputs:** {ports_text(spec, True)}; **outputs:** {ports_text(spec, False)}")
        found = example_text(spec)
        if found:
            lines.append(f"- **Example:** `{found}`" if "`" not in found else f"- **Example:** {found}")
        if spec.params:
            lines += ["", "| parameter | kind | default | allowed | meaning |", "|---|---|---|---|---|"]
            for name, param in spec.params.items():
                facts = param_facts(param)
                lines.append(f"| `{name}` | {facts['kind']} | `{facts['default']}` | {_md_cell(facts['allowed'])} | "
                             f"{_md_cell(facts['meaning'])} |")
    return "\n".join(lines) + "\n"
