"""The exported Model's members beside ``forward`` and ``inverse`` that set how it runs or loads.

``mode`` (which every group follows) and ``memory_budget`` (refused: an export keeps no
budget), ``track_inversion`` where reversible regions are, ``initialize`` where a layer
initialises from data (ActNorm), and ``_load_from_state_dict`` for renamed nodes' keys and
ActNorm's flags; ``REVERSIBLE_LIMITS`` is what the Model's docstring says a reversible region
does not take. Each function takes the export's writer (``emit._Writer``).
"""
from __future__ import annotations

from typing import Any

from revstudio.compiler.renames import layer_aliases

from . import model_api

# What the Model's docstring says a reversible region does not take (docs/cli.md, export).
REVERSIBLE_LIMITS = (
    "",
    '    In "reversible" mode each region is an autograd Function that frees and rebuilds',
    "    its tensors' storage, so some tools need another mode: double backward",
    '    (create_graph=True), torch.export and torch.jit.trace need "standard" or',
    '    "checkpoint"; torch.func transforms (grad, vmap, jacrev) need "standard"',
    '    ("checkpoint" takes vmap and jvp, not grad, vjp or jacrev: torch.func does',
    "    not take torch.utils.checkpoint's saved-tensor hooks, and says so).",
    "    torch.compile works in every mode (each region runs eagerly inside it);",
    "    torch.jit.script works in no mode (use torch.jit.trace or torch.export).",
    "    nn.DataParallel over several GPUs is refused: use DistributedDataParallel,",
    "    which works in every mode.",
)


def model_extras(writer: Any) -> list[str]:
    script = writer.inliner.require_name("revstudio.compiler.runtime_boundary", "refuse_script")
    whole = writer.inliner.require_name("revstudio.compiler.runtime_boundary", "refuse_checkpoint")
    writer.needs_any = True  # (load_state_dict's annotations)
    lines = [
        "",
        "    def __prepare_scriptable__(self) -> nn.Module:",
        "        # torch.jit.script asks this first: its own refusal named forward's *more",
        f"        return {script}(self)",
        "",
        "    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> Any:",
        '        """nn.Module\'s; a training checkpoint given whole is refused saying where its weights are."""',
        f"        {whole}(state_dict)",
        "        return super().load_state_dict(state_dict, strict=strict, assign=assign)",
        "",
        "    @property",
        "    def mode(self) -> str:",
        "        return self._mode",
        "",
        "    @mode.setter",
        "    def mode(self, value: str) -> None:",
        "        if value not in MODES:",
        "            raise ValueError(f\"mode {value!r} is not known; use one of {', '.join(MODES)}\")",
        "        # groups run their own regions: they follow the model's mode",
        "        for module in self.modules():",
        "            if isinstance(getattr(module, \"_mode\", None), str):",
        "                module._mode = value",
        "",
        "    @property",
        "    def memory_budget(self) -> None:",
        '        """None: an exported model keeps no activations beyond its mode\'s (see the setter)."""',
        "        return None",
        "",
        "    @memory_budget.setter",
        "    def memory_budget(self, value: object) -> None:",
        "        if value is not None:  # (a plain attribute here would be silently ignored)",
        "            raise ValueError(\"an exported model does not carry a memory budget (choosing what it keeps \"",
        "                             \"needs revstudio's memory estimate): every region runs in the model's mode; \"",
        "                             \"use revstudio.compile(graph, memory_budget=...) or revstudio train\")",
    ]
    if writer.has_regions:
        lines += [
            "",
            "    @property",
            "    def track_inversion(self) -> bool:",
            '        """Whether each reversible backward measures its regions\' inversion error, as',
            "        revstudio.compile's modules do (revstudio train turns it off: nothing reads it there).\"\"\"",
            "        return self._track_inversion",
            "",
            "    @track_inversion.setter",
            "    def track_inversion(self, value: bool) -> None:",
            "        self._track_inversion = bool(value)",
            "        for module in self.modules():",
            "            for part in vars(module).values():",
            "                if hasattr(part, \"track_error\"):  # a reversible region of the runtime",
            "                    part.track_error = self._track_inversion",
            *model_api.refuse_replicas(writer),
        ]
    if writer.initializes:
        frozen = writer.inliner.require_name("revstudio.compiler.runtime", "frozen_batch_stats")
        pending = writer.inliner.require_name("revstudio.compiler.runtime", "uninitialized")
        exporting = writer.inliner.require_name("revstudio.compiler.runtime", "exporting")
        refuse = writer.inliner.require_name("revstudio.compiler.runtime", "refuse_export_initialize")
        share = writer.inliner.require_name("revstudio.compiler.runtime", "share_from_rank0")
        eager = writer.inliner.require_name("revstudio.compiler.runtime_eager", "run_eagerly")
        lines += [
            "",
            "    @torch.no_grad()",
            "    def initialize(self, *inputs: torch.Tensor) -> None:",
            '        """Data-dependent initialisation (ActNorm) on one batch, once, as revstudio does.',
            "",
            "        Runs in standard mode, draws nothing from the caller's random stream and",
            "        leaves BatchNorm statistics alone. A loaded checkpoint is already initialised.",
            "        Never traced by torch.compile: it runs eagerly, a graph break.",
            '        """',
            "        if torch.compiler.is_compiling():",
            f"            if {exporting}():  # (run eagerly, it called itself until Python's recursion limit)",
            f"                {refuse}(self)",
            f"            return {eager}(type(self).initialize, self, *inputs)",
            f"        pending = {pending}(self)",
            "        if pending:",
            "            mode = self.mode",
            '            self.mode = "standard"',
            "            devices = sorted({x.device for x in inputs if x.device.type == \"cuda\"}, key=str)",
            "            self._initialized = True  # the pass below is forward itself: no recursion",
            "            try:",
            f"                with torch.random.fork_rng(devices=devices), {frozen}([self]):",
            "                    self.forward(*inputs)",
            "            except BaseException:",
            "                self._initialized = False",
            "                raise",
            "            finally:",
            "                self.mode = mode",
            "            # under DDP each rank initialised from its own batch: all take rank 0's layers",
            f"            {share}(pending)",
            "        self._initialized = True",
            "",
            "    def _loaded(self, incompatible: Any) -> None:",
            "        # after load_state_dict, its layers' flags say whether forward still initialises: read",
            "        # here, on real tensors (torch.export traces forward with fake ones, which cannot be read)",
            f"        self._initialized = not {pending}(self)",
        ]
        writer.needs_any = True
    return lines + load_method(writer, layer_aliases(writer.graph), reinitialize=writer.initializes)


def load_method(writer: Any, aliases: dict[str, str], reinitialize: bool = False) -> list[str]:
    """``_load_from_state_dict``, where loading needs more than nn.Module's: keys of renamed
    nodes move to the new layer name (each class for its own layers, so renames inside
    nested groups load too), and ActNorm's flags are read again after a load."""
    if not (aliases or reinitialize):
        return []
    lines = ["", "    def _load_from_state_dict(self, state_dict: Any, prefix: str, *args: Any, **kwargs: Any) -> None:"]
    if aliases:
        lines += [
            "        # nodes renamed in revstudio: checkpoints saved under the old names still load",
            f"        for old, new in {aliases!r}.items():",
            '            head = f"{prefix}{old}."',
            "            for key in [k for k in state_dict if k.startswith(head)]:",
            "                value = state_dict.pop(key)",
            '                state_dict.setdefault(f"{prefix}{new}.{key[len(head):]}", value)',
        ]
    lines.append("        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)")
    if reinitialize:
        lines.append("        self._initialized = False  # re-read ActNorm's flags from the loaded buffers")
    writer.needs_any = True
    return lines
