"""Rewrites that follow from the placement but are not one move: buffers, module containers,
pinned loaders, where checkpoints load, hard-coded devices, and what is left as a note."""

from __future__ import annotations

import ast

from torchport.analyze.flow.events import AttrStore
from torchport.analyze.flow.program import Unit
from torchport.analyze.flow.values import Kind, OKind, Origin, Place, all_origins, element
from torchport.findings import Severity
from torchport.port import text
from torchport.port.plan import Planner, _add_keyword

LEGACY = frozenset(
    {"torch.FloatTensor", "torch.LongTensor", "torch.DoubleTensor", "torch.Tensor",
     "torch.set_default_tensor_type", "torch.cuda.FloatTensor", "torch.cuda.LongTensor"}
)  # fmt: skip
PIN = "pin_memory=torch.cuda.is_available()"


def buffers_for(planner: Planner, origin: Origin) -> None:
    """A tensor made in a module's ``__init__`` that meets the device becomes a buffer."""
    events = planner.placement.interp.events
    for store in events.stores.values():
        if store.func.name != "__init__" or origin not in all_origins(store.val):
            continue
        if store.val.qual == "torch.nn.Parameter":
            continue  # a parameter moves with its module already
        stmt = store.stmt
        if id(stmt) in planner._done:
            continue
        planner._done.add(id(stmt))
        plan = planner.plans[store.cls.unit]
        if not store.cls.is_module or store.val.kind is not Kind.TENSOR:
            plan.note(stmt, f"`self.{store.attr}` holds tensors that stay on the CPU when the "
                      "module moves: register them as buffers")  # fmt: skip
            continue
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            continue
        if not _after_super_init(store.func.node, stmt):
            plan.note(stmt, f"`self.{store.attr}` is set before `super().__init__()`; move it "
                      "after to let the port register it as a buffer")  # fmt: skip
            continue
        ctx = store.cls.unit.ctx
        value = ctx.text(stmt.value)
        receiver = ctx.text(stmt.targets[0].value)  # type: ignore[attr-defined]
        # persistent=False keeps state_dict() and existing checkpoints exactly as they were.
        replacement = f'{receiver}.register_buffer("{store.attr}", {value}, persistent=False)'
        plan.edits.append(text.replace(ctx, stmt, replacement))


def _after_super_init(init: ast.AST, stmt: ast.stmt) -> bool:
    """Whether ``super().__init__()`` (or ``Base.__init__(self)``) runs before ``stmt``."""
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "__init__"
        and node.lineno < stmt.lineno
        for node in ast.walk(init)
    )


def containers(planner: Planner) -> None:
    """Layers kept in a plain list or dict of a module: ``nn.ModuleList``/``nn.ModuleDict``.

    The attribute's value over all of ``__init__`` decides (a list built with ``.append`` or
    ``+`` in a loop holds modules though its first value ``[]`` does not); each list display
    assigned to it is wrapped, and ``.append``/``+`` then work on the ModuleList as they did.
    """
    events = planner.placement.interp.events
    stores: dict[tuple[int, str], list[AttrStore]] = {}
    for store in events.stores.values():
        if store.cls.is_module and store.func.name == "__init__":
            stores.setdefault((id(store.cls), store.attr), []).append(store)
    for group in stores.values():
        cls, attr = group[0].cls, group[0].attr
        held = cls.attrs.get(attr)
        inner = element(held) if held is not None and held.kind is Kind.SEQ else None
        if inner is None or inner.kind is not Kind.MODULE or not inner.origins:
            continue
        if any(o.kind is not OKind.MODEL or o.parent is not None for o in inner.origins):
            continue  # references to layers registered elsewhere
        wrapped = [s for s in group if _wrap_container(planner, s)]
        if wrapped:
            planner.plans[cls.unit].note(
                wrapped[0].stmt,
                f"`self.{attr}` now registers its modules with nn.ModuleList/ModuleDict: their "
                "parameters are moved with the model and trained by its optimizer, which they "
                "were not",
                Severity.INFO,
            )


def _wrap_container(planner: Planner, store: AttrStore) -> bool:
    expr = store.value
    wrapper = _wrapper(expr)
    if wrapper is None or id(store.stmt) in planner._done:
        return False
    planner._done.add(id(store.stmt))
    unit = store.cls.unit
    nn = _nn(unit)
    plan = planner.plans[unit]
    empty = isinstance(expr, ast.List | ast.Dict) and not (
        expr.elts if isinstance(expr, ast.List) else expr.keys
    )
    if empty:
        plan.edits.append(text.replace(unit.ctx, expr, f"{nn}.{wrapper}()"))
    else:
        plan.edits.extend(text.wrap(unit.ctx, expr, f"{nn}.{wrapper}(", ")"))
    return True


def _wrapper(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.List | ast.ListComp | ast.Name):
        return "ModuleList"
    if isinstance(expr, ast.Dict):
        keys = expr.keys
        if all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in keys):
            return "ModuleDict"
    return None


def _nn(unit: Unit) -> str:
    local = unit.ctx.alias_for("torch.nn")
    return local or "torch.nn"


def device_loaded(planner: Planner) -> set[Origin]:
    """``--runtime-dependency``: loaders wrapped in DeviceLoader, whose batches arrive moved."""
    if not planner.options.runtime_dependency or planner.options.distributed:
        return set()
    out: set[Origin] = set()
    decided = planner.placement.decided
    for site in planner.placement.interp.events.loaders.values():
        if not any(decided.get(b) is Place.DEVICE for b in site.batches):
            continue
        parent = _assigned_name(site.unit, site.node)
        if parent is None or id(site.node) in planner._done:
            continue
        planner._done.add(id(site.node))
        device = planner.device_at(site.unit, site.func)
        edits = text.wrap(site.unit.ctx, site.node, "torchport.DeviceLoader(", f", {device})")
        planner.plans[site.unit].edits.extend(edits)
        out |= site.batches
    return out


def _assigned_name(unit: Unit, call: ast.Call) -> str | None:
    for node in unit.ctx.of_type(ast.Assign):
        assert isinstance(node, ast.Assign)
        if node.value is call and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            return node.targets[0].id
    return None


def loaders(planner: Planner) -> None:
    """Loaders whose batches go to the device pin their memory when there is CUDA to feed."""
    decided = planner.placement.decided
    for site in planner.placement.interp.events.loaders.values():
        if site.star_kwargs or site.pin_memory or id(site.node) in planner._done:
            continue
        if any(decided.get(b) is Place.DEVICE for b in site.batches):
            planner.plans[site.unit].edits.append(_add_keyword(site.unit, site.node, PIN))


def loads(planner: Planner) -> None:
    """``torch.load`` without ``map_location``: onto the device where its tensors meet the
    device directly; else onto the CPU, so that ``load_state_dict`` places them (a checkpoint
    saved on a GPU then loads anywhere, and optimizer step counters stay on the host)."""
    placement = planner.placement
    for origin in placement.interp.origins():
        if origin.kind is not OKind.LOAD or not isinstance(origin.node, ast.Call):
            continue
        node = origin.node
        if (
            any(k.arg == "map_location" or k.arg is None for k in node.keywords)
            or len(node.args) > 1
        ):
            continue
        if placement.decided.get(origin) is Place.DEVICE:
            target = planner.device_at(origin.unit, origin.func)
        else:
            target = '"cpu"'
        planner.plans[origin.unit].edits.append(
            _add_keyword(origin.unit, node, f"map_location={target}")
        )


def notes(planner: Planner) -> None:
    """What the port leaves as it was, and says so."""
    placement = planner.placement
    for unit in placement.program.units:
        plan = planner.plans[unit]
        for call in unit.ctx.calls:
            qual = placement.interp.qualname(unit, call.func) or ""
            if qual in LEGACY:
                plan.note(call, f"legacy `{qual}` always makes CPU tensors: use "
                          "torch.tensor/torch.zeros(..., device=device) instead")  # fmt: skip
            elif qual == "torch.nn.DataParallel" and not planner.options.distributed:
                plan.note(call, "nn.DataParallel is kept (one device is used as before); port "
                          "with --distributed for a DDP script", Severity.INFO)  # fmt: skip


def float64_entries(planner: Planner) -> None:
    """float64 NumPy data that the program casts to float32 later is cast where it enters torch:
    half the bytes to copy, and no float64 tensor on the device."""
    events = planner.placement.interp.events
    cast = set(events.casts)
    for batch in list(cast):
        cast |= events.sources.get(batch, set())
    for origin in planner.placement.interp.origins():
        node = origin.node
        if origin.kind is not OKind.DATA or origin.dtype != "float64" or origin not in cast:
            continue
        if not isinstance(node, ast.Call) or _is_cast(origin.unit, node):
            continue
        planner.plans[origin.unit].edits.extend(
            text.method_suffix(origin.unit.ctx, node, ".float()")
        )


def _is_cast(unit: Unit, call: ast.Call) -> bool:
    parent = unit.ctx.parents.get(call)
    return isinstance(parent, ast.Attribute) and parent.attr in (
        "float",
        "to",
        "type",
        "half",
        "double",
        "bfloat16",
    )
