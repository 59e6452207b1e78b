"""Plan -> Python source: one class per plan, one statement per op (torch.fx style).

:func:`generate` compiles the graph exactly as ``revstudio.compile`` does while
recording every layer's constructor call, then walks the compiler's lowered
plan: ``emit_op`` dispatches on the op kind, layers are rebuilt with the
recorded classes and arguments, and every name comes from one
:class:`~revstudio.codegen.namespace.Namespace`. The file around the classes is
laid out by :mod:`~revstudio.codegen.sections` and checked by
:mod:`~revstudio.codegen.bindings`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from revstudio.compiler import assembly
from revstudio.compiler.renames import layer_aliases

from . import CodegenError, model_api, model_members
from .bindings import check_bindings
from .construct import ConstructionError, Record, call_source, recording
from .inline import ImportFact, InlineError, Inliner, names_in_inlinable_code, plugin_inlinable
from .namespace import Namespace, camel, comment_text, docstring_text, is_safe_attribute
from .regions import ASSEMBLY, RegionWriter
from .sections import MODES, assemble
from .segments import RUN_PART, Segment, segments
from .training import top_level_names, training_parts

__all__ = ["MODES", "ClassCode", "check_bindings", "comment_text", "docstring_text", "generate"]


@dataclass
class ClassCode:
    """The source of one generated ``nn.Module`` class."""

    name: str
    lines: list[str] = field(default_factory=list)


class _Writer:
    """Everything one export needs: the plan, the recorded layers, names and inlined code."""

    def __init__(self, graph: Any, model: Any, record: Record, report: Any = None) -> None:
        self.graph = graph
        self.report = report
        self.model = model
        self.plan = model.plan
        self.record = record
        self.inliner = Inliner()
        # One namespace for every module-level name of the file: it starts out knowing
        # every name the inlined runtime and layers define or import.
        self.names = Namespace(taken=names_in_inlinable_code())
        self.classes: dict[str, ClassCode] = {}  # plan key ("" = the model) -> class
        self.body_plans = {id(p): key for key, p in self.plan.groups.items()}
        self.uses_math = False
        self.needs_any = False
        self.instances: dict[int, Any] = {id(self.plan): model}
        self.regions = RegionWriter(self)
        self.plugin_packages: dict[str, None] = {}  # plugins whose layers the file imports

    # ---- layers -----------------------------------------------------
    def class_ref(self, module: Any, where: str) -> str:
        import torch.nn as nn

        cls = type(module)
        if cls.__module__.startswith("revstudio.") or plugin_inlinable(cls.__module__):
            try:
                return self.inliner.require(cls)
            except InlineError as exc:
                raise CodegenError(f"{where}: {exc}") from None
        if getattr(nn, cls.__name__, None) is cls:
            return f"nn.{cls.__name__}"
        if cls.__module__.split(".")[0] not in ("torch", "__main__", "builtins") and "." not in cls.__qualname__:
            return self.plugin_import(cls)
        raise CodegenError(
            f"{where}: its module class {cls.__module__}.{cls.__qualname__} is neither in torch.nn nor a "
            "torch-only revstudio module, so it cannot be written into standalone code"
        )

    def plugin_import(self, cls: type) -> str:
        """``from plugin_module import Class``: a plugin's layer stays in its package.

        The exported file then needs that package installed (its header says so);
        a plugin that can travel sets ``__revstudio_inline__`` and is inlined instead.
        """
        target = f"{cls.__module__}.{cls.__name__}"
        for bound, fact in self.inliner.imports.items():
            if fact.target == target:
                return bound
        bound = cls.__name__
        n = 1
        while bound in self.inliner.imports or bound in self.inliner.names or not self.names._is_free(bound):
            n += 1
            bound = f"{cls.__name__}{n}"
        self.names.reserve(bound)
        self.inliner.imports[bound] = ImportFact(bound, cls.__module__, cls.__name__)
        package = cls.__module__.split(".")[0]
        self.plugin_packages.setdefault(package, None)
        return bound

    def body_key(self, module: Any) -> str | None:
        # a compiled group body carries the plan it was built from (GroupModule._plan)
        for attr in ("_plan", "plan"):
            plan = getattr(module, attr, None)
            if plan is not None and id(plan) in self.body_plans:
                return self.body_plans[id(plan)]
        return None

    def construct(self, module: Any, where: str) -> str:
        """Source that builds ``module`` the way the compiler did."""
        key = self.body_key(module)
        if key is not None:
            return f"{self.body_class(key, module)}()"
        construction = self.record.of(module)
        if construction is None:
            raise CodegenError(f"{where}: the compiler built this layer in a way the exporter could not observe")
        try:
            text = call_source(construction, self.class_ref(module, where), lambda m: self.construct(m, where), where)
        except ConstructionError as exc:
            raise CodegenError(str(exc)) from None
        self.uses_math = self.uses_math or "math." in text
        return text

    # ---- classes ----------------------------------------------------
    def body_class(self, key: str, instance: Any) -> str:
        """The class of a group body (one per lowered body; every copy is an instance)."""
        if key not in self.classes:
            body = self.plan.groups[key]
            name = self.names.name("Group " + body.name, key=("class", key), fallback="group", style=camel)
            self.classes[key] = ClassCode(name)  # placeholder first: bodies may nest
            self.instances[id(body)] = instance
            self.classes[key] = self.write_class(body, instance, name, is_model=False)
        return self.classes[key].name

    def write_class(self, plan: Any, instance: Any, name: str, is_model: bool) -> ClassCode:
        code = ClassCode(name)
        local = self.names.child()
        for op in plan.node_ops():
            local.reserve(op.module)
        layers: list[str] = []
        for op in plan.node_ops():
            module = getattr(instance, op.module)
            where = f"node {op.node!r} ({op.type})"
            # an attribute cannot shadow a module-level name (self.F is not F), only nn.Module's own
            if not is_safe_attribute(op.module):
                raise CodegenError(f"{where}: the compiler named its layer {op.module!r}, which is not a safe identifier")
            layers.append(f"        self.{op.module} = {self.construct(module, where)}  # node {ascii(op.node)} ({op.type})")
        self.regions.prepare(plan)
        forward, signature, returns = self.write_forward(plan, local, is_model)
        args = [a.split(":")[0] for a in signature.split(", ")] if signature else []
        lines = code.lines
        if is_model:
            lines += [f"class {name}(nn.Module):",
                      f'    """{docstring_text(self.graph.name)}: the network drawn in revstudio.',
                      "",
                      '    ``mode`` says how reversible regions run: "reversible" (activations are rebuilt',
                      '    in backward instead of stored), "standard" (plain autograd) or "checkpoint"',
                      "    (torch.utils.checkpoint); the weights are the same in every mode.",
                      *(model_members.REVERSIBLE_LIMITS if self.has_regions else ()),
                      '    """', ""]
        else:
            lines += [f"class {name}(nn.Module):",
                      f'    """Group {docstring_text(plan.name)}: ``forward(*inputs)`` returns a tuple of outputs."""', ""]
        lines += ["    def __init__(self) -> None:", "        super().__init__()", '        self._mode = "reversible"']
        if is_model and self.initializes:
            lines += ["        self._initialized = False", "        self.register_load_state_dict_post_hook(type(self)._loaded)"]
        if is_model and self.has_regions:
            lines.append("        self._track_inversion = True")
        lines += layers
        lines += self.regions.init_lines(plan)
        if is_model:
            lines += model_api.weights_dtype(self.model.dtype)
            lines += model_members.model_extras(self)
        else:
            body = self.graph.groups.get(plan.name)
            lines += model_members.load_method(self, layer_aliases(body) if body is not None else {})
            lines += model_api.refuse_replicas(self) if self.regions.extras_for(plan).regions else []
        lines += [""] + (model_api.forward_head(self, plan, signature, returns, args) if is_model
                         else [f"    def forward(self, {signature}) -> {returns}:"])
        run = (["        if not self._initialized:", f"            self.initialize({', '.join(args)})"]
               if is_model and self.initializes else []) + forward
        if is_model:
            lines.append(f'        """{self.shapes_doc(plan)}"""')
            lines += model_api.count_check(self, plan, args) + model_api.input_check(self, plan, args, run)
        lines += model_api.guarded(self, plan, run, args, bool(getattr(instance, "_flow_parts", ()))) \
            if is_model else run
        lines += model_api.logdet_property(self, plan, instance, is_model)
        if plan.invertible:
            lines += self.regions.inverse_method(plan, single=is_model)
        elif is_model:
            lines += model_api.not_invertible(plan)
        lines += self.regions.helper_methods(plan)
        if self.regions.extras_for(plan).runs_parts:
            recompute = self.inliner.require_name(ASSEMBLY, "recompute_in_backward")
            lines += RUN_PART.format(recompute=recompute).rstrip("\n").split("\n")
        return code

    def shapes_doc(self, plan: Any) -> str:
        """``image (B, 3, 16, 16) -> logits (B, 10)``: what forward takes and returns, and which of the
        input sizes it holds a batch to."""
        def shape(dims: Any) -> str:
            return "(B, " + ", ".join(str(int(d)) for d in dims) + ")" if dims is not None else "(B, ?)"

        ins = [f"{docstring_text(op.name)} {shape(op.shape)}" for op in sorted(plan.inputs, key=lambda o: o.index)]
        outs = []
        for op in sorted(plan.outputs, key=lambda o: o.index):
            info = self.report.nodes.get(op.node) if self.report is not None else None
            dims = (getattr(info, "inputs", None) or {}).get("in") if info is not None else None
            outs.append(f"{docstring_text(op.name)} {shape(dims)}")
        doc = f"{', '.join(ins)} -> {', '.join(outs)}; B is the batch size."
        if any(op.shape is not None and len(op.shape) >= 2 for op in plan.inputs):  # (forward checks no more)
            doc += ("\n\n        Each input is checked for its rank and channels only: the sizes after the channels"
                    "\n        may differ where the layers take them (as a fully convolutional network takes any"
                    "\n        height and width), and then the outputs' differ too.\n        ")
        return doc

    @property
    def has_regions(self) -> bool:
        """Whether the model or a group body has a reversible region (asked once all are written)."""
        return any(extras.regions for extras in self.regions.extras.values())

    @property
    def initializes(self) -> bool:
        """Whether some layer has data-dependent initialisation (ActNorm) the model must run first."""
        import torch

        return any(hasattr(m, "initialize") and isinstance(getattr(m, "initialized", None), torch.Tensor)
                   for m in self.model.modules())

    def write_forward(self, plan: Any, local: Namespace, is_model: bool) -> tuple[list[str], str, str]:
        """Body lines, parameter list and return annotation of ``forward``."""
        values: dict[str, str] = {}
        params: list[str] = []
        for op in sorted(plan.inputs, key=lambda o: o.index):
            arg = local.name(op.name, key=("value", op.output), fallback="x")
            values[op.output] = arg
            params.append(f"{arg}: torch.Tensor")

        def value(identifier: str) -> str:
            if identifier not in values:
                values[identifier] = local.name(identifier, key=("value", identifier))
            return values[identifier]

        # An in-place layer gets copies of values others still read, decided as the compiler does.
        shared = assembly.shared_values(plan)

        def node_lines(op: Any) -> list[str]:
            module = getattr(self._instance_of(plan), op.module)
            return self.emit_node(op, value, clone=assembly.copies_inputs(module, op.inputs, shared))

        for op in plan.ops:
            if op.kind not in ("input", "output", "node", "region"):
                raise CodegenError(f"the plan holds an op of kind {op.kind!r} where the exporter expects none")
        ops = assembly.executed_ops(plan)
        parts = segments(plan)
        outs = sorted(plan.outputs, key=lambda o: o.index)
        # values are dropped after their last reader, as the compiled module drops them
        released = assembly.released_after([(op.inputs, op.outputs) for op in ops], [o.input for o in outs])
        scope = set(values)  # the values forward itself holds (not those inside a part)
        body: list[str] = []
        i = 0
        while i < len(ops):
            seg = parts.get(i)
            if seg is None:
                op = ops[i]
                body += node_lines(op) if op.kind == "node" else self.regions.emit(plan, op, value)
                scope.update(op.outputs)
                end = i + 1
            else:
                # the inputs nothing reads after the part are handed over before it runs, so each
                # goes after its last reader in there (as the compiled module drops them)
                handed = [v for gone in released[seg.start:seg.end] for v in gone if v in scope]
                body += self.write_part(plan, seg, ops[seg.start:seg.end], value, node_lines, handed)
                scope.update(seg.outputs)
                scope.difference_update(handed)
                end = seg.end
            body += _drop([v for gone in released[i:end] for v in gone if v in scope], value)
            i = end
        if is_model and len(outs) == 1:
            body.append(f"        return {value(outs[0].input)}")
            returns = "torch.Tensor"
        else:
            items = ", ".join(value(o.input) for o in outs)
            body.append(f"        return ({items}{',' if len(outs) == 1 else ''})")
            returns = "tuple[torch.Tensor, ...]"
        return body, ", ".join(params), returns

    def write_part(self, plan: Any, seg: Segment, ops: list[Any], value: Any, node_lines: Any,
                   handed: Sequence[str]) -> list[str]:
        """A method holding one run of ordinary layers; forward calls it through ``_run_part``
        with a list of its inputs, which it empties: forward first drops ``handed``, the inputs
        it no longer needs, so the part's own ``del`` frees them."""
        extras = self.regions.extras_for(plan)
        name = self.regions.method(plan, "part", ops[0].node)
        nodes = ", ".join(docstring_text(op.node) for op in ops)
        names = [value(v) for v in seg.inputs]
        taken = f"({names[0]},)" if len(names) == 1 else ", ".join(names)
        lines = ["", f"    def {name}(self, inputs: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:",
                 f'        """Nodes {nodes}."""',
                 f"        {taken} = inputs",
                 "        inputs.clear()  # only this method holds them now"]
        released = assembly.released_after([(op.inputs, op.outputs) for op in ops], seg.outputs)
        for op, gone in zip(ops, released):
            lines += node_lines(op) + _drop(gone, value)
        outs = [value(v) for v in seg.outputs]
        lines.append(f"        return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
        extras.method_lines += lines
        extras.runs_parts = True
        layers = ", ".join(f"self.{op.module}" for op in ops)
        call = f"self._run_part(self.{name}, [{layers}], inputs)"
        lines = [f"        inputs = [{', '.join(names)}]"] + _drop(handed, value)
        if not outs:
            return lines + [f"        {call}"]
        target = f"({outs[0]},)" if len(outs) == 1 else ", ".join(outs)
        return lines + [f"        {target} = {call}"]

    def _instance_of(self, plan: Any) -> Any:
        return self.instances.get(id(plan))

    # ---- ops (one statement each) -------------------------------------
    @staticmethod
    def emit_node(op: Any, value: Any, indent: str = "        ", clone: bool = False) -> list[str]:
        args = ", ".join(value(v) + (".clone()" if clone else "") for v in op.inputs)
        outs = [value(v) for v in op.outputs]
        call = f"self.{op.module}({args})"
        notes = [f"node {ascii(op.node)}"] if op.node != op.module else []
        if clone:
            notes.append("in place, so it gets a copy of a value read elsewhere")
        note = f"  # {'; '.join(notes)}" if notes else ""
        if len(outs) == 1:
            return [f"{indent}{outs[0]} = {call}[0]{note}"]
        return [f"{indent}{', '.join(outs)} = {call}{note}"]


def generate(graph: Any, *, with_training: bool = False, training: dict[str, Any] | None = None) -> str:
    """The whole exported file for ``graph``; raises :class:`CodegenError` naming what to fix.

    ``training``: the section the file embeds instead of ``graph.training``, in the script
    and in the project it reopens to (e.g. one from :func:`~revstudio.codegen.relocated_training`)."""
    if training is not None:
        from revstudio.core.project import dumps, loads

        graph = loads(dumps(graph))
        graph.training = dict(training)
    model, record, report = _compile_recorded(graph)
    writer = _Writer(graph, model, record, report)
    for reserved in ("Model", *(sorted(top_level_names()) if with_training else ())):
        writer.names.reserve(reserved)
    model_class = writer.write_class(writer.plan, model, "Model", is_model=True)
    script = None
    if with_training:
        plan = writer.plan
        script = training_parts(graph, report, training,
                                [op.node for op in sorted(plan.inputs, key=lambda o: o.index)],
                                [op.node for op in sorted(plan.outputs, key=lambda o: o.index)])
    source = assemble(writer, model_class, script)
    check_bindings(source, {"Model"} | {c.name for c in writer.classes.values()})
    return source


def _compile_recorded(graph: Any) -> tuple[Any, Record, Any]:
    """``revstudio.compile(graph)`` on the CPU, watching every layer's constructor call."""
    from revstudio.core.check import check

    report = check(graph)
    if not report.valid:
        problems = [str(d) for d in report.diagnostics if d.severity == "error"]
        # the first few in the message itself: a script's traceback shows it, not ``problems``
        more = f"; and {len(problems) - 3} more; revstudio check FILE lists them all" if len(problems) > 3 else ""
        raise CodegenError(f"{graph.name}: the graph has errors: {'; '.join(problems[:3])}{more}", problems)
    import torch

    from revstudio.compiler import CompileError
    from revstudio.compiler.module import build

    # Building draws initial weights from the global RNG; the user's stream must not move.
    with torch.random.fork_rng(devices=[]), recording() as record:
        try:
            model = build(graph, mode="reversible", device="cpu", report=report)
        except CompileError as exc:
            raise CodegenError(str(exc)) from None
    from .plugin_probe import check_plugin_layers

    check_plugin_layers(graph)  # (a plugin's layer that breaks its contract would export silently wrong)
    return model, record, report


def _drop(gone: Sequence[str], value: Any) -> list[str]:
    """``del`` of values nothing reads from here on: what autograd did not save is freed now,
    not when the method returns."""
    return [f"        del {', '.join(value(v) for v in gone)}"] if gone else []
