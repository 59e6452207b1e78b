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

from collections.abc import Mapping
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
    "F", "copy 0") cannot be replaced or deleted; a Repeat's list of copies takes no new one."""

    def __init__(self, items: Mapping[str, Any], held: Mapping[str, str], node: str, closed: bool) -> None:
        super().__init__(items)
        self.held, self.node, self.closed = dict(held), node, closed

    def __reduce__(self) -> Any:  # deepcopy and pickle rebuild it whole (no refused item by item)
        return (HeldModules, (dict(self), self.held, self.node, self.closed))

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


def hold(module: nn.Module, node: str, what: str | None, children: Mapping[str, str], closed: bool = False) -> None:
    """Make ``module`` (``what`` of ``node``; None: a list of copies, which no hook fires on anyway)
    warn of new hooks and, for ``children`` (name -> what it is), replacement. A body's own regions
    have held what they take apart before the enclosing region holds it again (idempotent)."""
    modules = module.__dict__["_modules"]
    if not isinstance(modules, HeldModules):
        module.__dict__["_modules"] = HeldModules(modules, children, node, closed)
    for name in HOOKS:
        hooks = module.__dict__.get(name)
        if what is not None and hooks is not None and not isinstance(hooks, HeldHooks):
            module.__dict__[name] = HeldHooks(hooks, node, what)


def hold_region(owner: nn.Module, data: Mapping[str, Any]) -> None:
    """Hold the modules of a region's data (``assembly.region_data``) that it takes apart, in its group
    bodies too, as ``assembly._add_steps`` finds them over ``owner``."""
    for step in data["steps"]:
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
            hold(module, node, "the module", {"f": "F", "g": "G"})
        elif kind == "AffineCoupling" and hasattr(module, "net"):
            # (the region calls its net through it, but trains the parameters the net had when built)
            hold(module, node, "the module", {"net": "the net"})
        for block in blocks:
            hold_region(block, step["body"])
