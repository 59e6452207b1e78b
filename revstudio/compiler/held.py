"""The modules a reversible region takes apart: a Repeat node's copies, a Group node's body and an
AdditiveCoupling's F and G, which the region runs as steps of its own (``assembly._add_steps``), and an
AffineCoupling, whose net it calls but whose parameters it took when built. Their ``forward`` never
runs, so a module set in the place of a copy or of F would be left out of forward while its weights
trained (or, a net, never trained), and a hook on them would never be called: a replacement is refused
and a hook warned of, naming the node and what to do instead. :func:`hold_region` walks a region's data
as ``assembly`` does (the exported code inlines ``assembly``, so none of this is written there).

It lives in the held module's own dictionaries (``_modules`` and the hook dictionaries are replaced by
the kinds below), not in its class: the exported code inlines the classes, ``type()`` stays what torch
and the exporter know, and nothing runs on the forward path.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from torch import nn

_WRAP = ("or wrap the model: nn.Sequential(model, new_layer)")
HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")


def node_words(owner: nn.Module, attribute: str, type_id: str) -> str:
    """``node 'rep' (Repeat) in the model`` / ``... in group 'block'`` for the layer ``attribute`` of
    the executor ``owner`` (a compiled model or a group body)."""
    plan = owner.__dict__.get("_plan")
    root = owner.__dict__.get("_root")
    node = next((nid for nid, attr in plan.modules.items() if attr == attribute), attribute) if plan else attribute
    where = "the model" if root is None or plan is None or plan is root.plan else f"group {plan.name!r}"
    return f"node {node!r} ({type_id}) in {where}"


class HeldModules(dict):  # type: ignore[type-arg]
    """A held module's ``_modules``: the children the region runs (``held``: name -> what it is,
    "F", "copy 0") cannot be replaced or deleted; a Repeat's list of copies takes no new one; and
    the plain attributes the program read once when it was built (``fixed``: a coupling's ``split``,
    a Split's ``sizes``) cannot be set or deleted: ``nn.Module.__setattr__`` asks ``name in _modules``
    of every value that is neither a Parameter nor a Module, which is where it is refused."""

    def __init__(self, items: Mapping[str, Any], held: Mapping[str, str], node: str, closed: bool,
                 fixed: Mapping[str, str] | None = None) -> None:
        super().__init__(items)
        self.held, self.node, self.closed, self.fixed = dict(held), node, closed, dict(fixed or {})

    def __reduce__(self) -> Any:  # deepcopy and pickle rebuild it whole (no refused item by item)
        return (HeldModules, (dict(self), self.held, self.node, self.closed, self.fixed))

    def __contains__(self, name: object) -> bool:
        if name in self.fixed:
            raise AttributeError(
                f"cannot set {name!r} of {self.node}: the model read it once when it was built: {self.fixed[name]}. "
                "Change the node's parameter in the graph and compile again "
                "(rs.compile; model.state_dict() loads by node id into the new model)")
        return dict.__contains__(self, name)

    def _refuse(self, name: str, verb: str) -> None:
        what = self.held.get(name, f"copy {name}" if self.closed else name)
        raise AttributeError(
            f"cannot {verb} {name!r}: it is {what} of {self.node}, whose reversible region runs the layers "
            "it was built with; another module set in its place would be left out of forward while its weights "
            "trained (set its weights, or freeze them with requires_grad_(False), instead). Change the group in "
            "the graph and compile again (rs.compile; model.state_dict() loads by node id, strict=False for the "
            f"changed node), {_WRAP}")

    def __setitem__(self, name: str, value: Any) -> None:
        if name in self.held and self.get(name) is not value:
            self._refuse(name, "replace")
        if self.closed and name not in self:
            self._refuse(name, "add")
        super().__setitem__(name, value)

    def __delitem__(self, name: str) -> None:
        if name in self.held:
            self._refuse(name, "replace")
        super().__delitem__(name)

    def pop(self, name: str, *default: Any) -> Any:
        if name in self.held:
            self._refuse(name, "replace")
        return super().pop(name, *default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for name, value in dict(*args, **kwargs).items():
            self[name] = value


class HookNeverFires(UserWarning):
    """A hook registered on a module a reversible region takes apart: it will never be called."""


class HeldHooks(dict):  # type: ignore[type-arg]
    """A held module's hook dictionary: a hook registered here is warned of (:class:`HookNeverFires`), once per
    node and place in the caller's code, and kept, as torch keeps it, but never called. A warning, not a
    refusal: tools register hooks on every module of a model (summaries, activation statistics) and must not
    fail on this one."""

    def __init__(self, items: Mapping[int, Any], node: str, what: str) -> None:
        super().__init__(items)
        self.node, self.what = node, what

    def __reduce__(self) -> Any:
        return (HeldHooks, (dict(self), self.node, self.what))

    def __setitem__(self, key: int, hook: Any) -> None:
        import warnings

        warnings.warn(
            f"a hook on {self.node} (its own module, a Repeat's copy or a Group's body) will never be called: its "
            "reversible region runs the layers inside it as steps of its own, never that module's forward. Hook a "
            "layer inside it (model.named_modules() lists them; "
            "their hooks fire in every mode, again when backward recomputes them), or the next node's layer with "
            "register_forward_pre_hook to see what it hands on", HookNeverFires, stacklevel=3)
        super().__setitem__(key, hook)


def is_held(module: object) -> bool:
    """Whether a region takes ``module`` apart (its hooks never fire): internal hooks leave it out."""
    return isinstance(getattr(module, "__dict__", {}).get("_forward_hooks"), HeldHooks)


def hold(module: nn.Module, node: str, what: str | None, children: Mapping[str, str], closed: bool = False,
         fixed: Mapping[str, str] | None = None) -> None:
    """Make ``module`` (``what`` of ``node``; None: no hook is warned of) warn of new hooks and refuse,
    for ``children`` (name -> what it is), replacement, and setting the attributes ``fixed`` (name -> why). A body's
    own regions have held what they take apart before the enclosing region holds it again (idempotent)."""
    modules = module.__dict__["_modules"]
    if not isinstance(modules, HeldModules):
        module.__dict__["_modules"] = HeldModules(modules, children, node, closed, fixed)
    elif fixed:
        modules.fixed.update(fixed)
    for name in HOOKS:
        hooks = module.__dict__.get(name)
        if what is not None and hooks is not None and not isinstance(hooks, HeldHooks):
            module.__dict__[name] = HeldHooks(hooks, node, what)


def hold_region(owner: nn.Module, data: Mapping[str, Any]) -> None:
    """Hold the modules of a region's data (``assembly.region_data``) that it takes apart, in its group
    bodies too, as ``assembly._add_steps`` finds them over ``owner``."""
    for step in data["steps"]:
        if step["kind"] == "node" and step["type"] in ("Split", "Concat") and hasattr(
                getattr(owner, step["module"]), "sizes"):  # (sliced by them, as assembly._add_steps does)
            hold(getattr(owner, step["module"]), node_words(owner, step["module"], step["type"]), None, {},
                 fixed=_read_once(getattr(owner, step["module"]), ("sizes", "dim")))
        if step["kind"] != "node" or step["type"] not in ("AdditiveCoupling", "AffineCoupling", "Group", "Repeat"):
            continue
        module = getattr(owner, step["module"])
        node = node_words(owner, step["module"], step["type"])
        kind = step["type"]
        blocks: list[nn.Module] = []
        if kind == "Repeat" and isinstance(getattr(module, "blocks", None), nn.ModuleList):
            hold(module, node, "the module", {"blocks": "the list of copies"})
            hold(module.blocks, node, None, {str(i): f"copy {i}" for i in range(len(module.blocks))}, closed=True)
            blocks = list(module.blocks)
            for i, block in enumerate(blocks):
                hold(block, node, f"copy {i}", {})
        elif kind == "Group" and isinstance(getattr(module, "body", None), nn.Module):
            hold(module, node, "the module", {"body": "the body"})
            blocks = [module.body]
            hold(module.body, node, "the body", {})
        elif kind == "AdditiveCoupling" and hasattr(module, "f"):
            hold(module, node, "the module", {"f": "F", "g": "G"}, fixed=_read_once(module, ("split",)))
        elif kind == "AffineCoupling" and hasattr(module, "net"):
            # (the region calls its net through it, but trains the parameters the net had when built)
            hold(module, node, "the module", {"net": "the net"}, fixed=_read_once(module, ("split",)))
        for block in blocks:
            hold_region(block, step["body"])


def _read_once(module: nn.Module, names: Iterable[str]) -> dict[str, str]:
    """Those of ``names`` that ``module`` has as plain attributes (what a region read when built), each
    with why it matters."""
    return {n: ("its reversible region slices the streams by the value it had then, so a new one would be "
            "ignored") for n in names if n in module.__dict__}


def hold_inplace(owner: nn.Module, attribute: str, type_id: str, module: nn.Module) -> None:
    """A layer forward calls (outside a region) whose ``inplace`` decided, when the model was built,
    whether forward copies its input for it: setting ``inplace`` later is refused (an in-place layer
    that was not copied for would overwrite a value another layer still reads)."""
    if isinstance(module.__dict__.get("inplace"), bool):
        hold(module, node_words(owner, attribute, type_id), None, {},
             fixed={"inplace": "forward decided from it whether to copy the layer's input, so an in-place "
                            "layer now could overwrite a value another layer still reads"})
