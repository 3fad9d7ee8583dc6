"""Port a program: its files analysed together, then each file's edits applied and checked.

1. Hard-coded devices (``.cuda()`` with no CPU fallback) become the selected device.
2. The placement analysis decides what goes to the device (:mod:`torchport.analyze.placement`).
3. The planner spells the moves out as text edits (:mod:`plan`, :mod:`rewrites`), the header
   adds the selection and imports, and ``--amp``/``--distributed`` follow.

The port never executes user code.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from torchport.analyze import engine
from torchport.analyze.context import FileContext
from torchport.analyze.fixer import apply_edits
from torchport.analyze.flow.program import Unit, components
from torchport.analyze.placement import Mode, analyse
from torchport.findings import Finding, Severity
from torchport.port import amp, header, rewrites
from torchport.port.options import PortOptions
from torchport.port.plan import Planner, UnitPlan


@dataclass
class PortResult:
    """One file before and after, with the notes on what was left alone and why."""

    path: str
    before: str
    after: str
    notes: list[Finding] = field(default_factory=list)
    entry_point: bool = False  # has ``if __name__ == "__main__":`` (what torchrun launches)

    @property
    def changed(self) -> bool:
        return self.before != self.after


def port_source(
    source: str, path: str, options: PortOptions, known_module_classes: Iterable[str] = ()
) -> PortResult:
    """The ported text of one file; raises SyntaxError on invalid Python."""
    del known_module_classes  # module classes of other files come from analysing them together
    return port_sources([(path, source)], options)[0]


def port_sources(
    files: list[tuple[str, str]],
    options: PortOptions,
    force: Iterable[tuple[str, int, str]] = (),
) -> list[PortResult]:
    """Port several files; files that import each other are analysed as one program.

    ``force``: (path, line, call) creation sites to put on the device whatever the analysis finds
    (the sites a run of the port showed to be left behind, for ``--verify``).
    """
    staged = _Staged()
    contexts = []
    for path, source in files:
        ctx = FileContext(source, path)
        name = _device_name(ctx)
        text, changed = header.unhardcode(ctx, name)
        staged.files[path] = (source, text, changed)
        staged.names[path] = name
        contexts.append(FileContext(text, path) if changed else ctx)
    staged.paths = [c.path for c in contexts]
    results: dict[str, PortResult] = {}
    for group in components(contexts):
        for result in _port_program(group, staged, options, set(force)):
            results[result.path] = result
    return [results[path] for path, _ in files]


@dataclass
class _Staged:
    """The files after their hard-coded devices were replaced, before the analysis."""

    files: dict[str, tuple[str, str, bool]] = field(default_factory=dict)  # source, text, changed
    names: dict[str, str] = field(default_factory=dict)  # the device's name in each file
    paths: list[str] = field(default_factory=list)


def _port_program(
    contexts: list[FileContext],
    staged: _Staged,
    options: PortOptions,
    force: set[tuple[str, int, str]],
) -> list[PortResult]:
    placement = analyse(contexts, Mode.PORT, staged.paths, force)
    planner = Planner(placement, options)
    for unit in placement.program.units:
        plan = planner.plans[unit]
        plan.device = staged.names[unit.path]
        plan.has_selection = _has_selection(unit.ctx, plan.device)
    if not placement.aware:
        rewrites.float64_entries(planner)
    plans = planner.plan()
    if not placement.aware:
        rewrites.containers(planner)
        rewrites.loaders(planner)
        rewrites.loads(planner)
    rewrites.notes(planner)
    results = []
    for unit in placement.program.units:
        source, _, unhardcoded = staged.files[unit.path]
        plan = plans[unit]
        plan.edits.extend(amp.modernise(unit.ctx))
        if unhardcoded:
            plan.uses_device = True
        if options.amp == "bf16":
            values = placement.interp.events.values
            autocast, missed = amp.bf16_edits(unit.ctx, values, plan.device)
            plan.edits.extend(autocast)
            plan.edits.extend(amp.same_dtype_writes(unit.ctx, values))
            bce = amp.bce_calls(unit.ctx, values) if autocast else []
            plan.edits.extend(bce)
            plan.needs_bce = bool(bce)
            for stmt in missed:
                plan.note(stmt, amp.NO_STEP, Severity.INFO)
            plan.uses_device = plan.uses_device or bool(autocast)
        after = _apply(unit, plan, options)
        notes = [*plan.notes, *_left_for_check(after, unit.path)]
        if options.distributed:
            from torchport.port.distributed import distribute

            after, more = distribute(after, unit.path, options)
            notes.extend(more)
        results.append(
            PortResult(unit.path, source, after, notes, entry_point=_has_main_guard(unit))
        )
    return results


def _apply(unit: Unit, plan: UnitPlan, options: PortOptions) -> str:
    ctx = unit.ctx
    blocks: list[str] = []
    imports: list[str] = []
    if plan.uses_device and not plan.has_selection:
        blocks.append(header.selection(ctx, plan.device, options.runtime_dependency))
    if plan.needs_helper and plan.helper not in unit.functions:
        blocks.append(header.helper(ctx, plan.helper))
    if plan.needs_bce and amp.BCE_HELPER not in unit.functions:
        blocks.append(header.bce_helper(ctx, amp.BCE_HELPER))
    if blocks and header.torch_name(ctx) is None:
        imports.append("import torch")
    uses_torchport = options.runtime_dependency and (plan.uses_device or plan.needs_helper)
    if uses_torchport and "torchport" not in ctx.imports:
        imports.append("import torchport")
    edits = [*plan.edits, *header.header_edits(ctx, blocks, imports)]
    after, _ = apply_edits(ctx.source, edits)
    return after


def _left_for_check(after: str, path: str) -> list[Finding]:
    """The device errors ``check`` still finds in the ported text: the port never reports
    "No findings" over code that ``check`` says will fail on a device."""
    try:
        found = engine.analyze(after, path, lambda code: code.startswith("TP1"))
    except SyntaxError:
        return []  # reported where the result is checked before it is written
    return [
        replace(f, message=f"after porting, {f.message}")
        for f in found
        if f.severity is Severity.ERROR and f.code != "TP100"
    ]


def _device_name(ctx: FileContext) -> str:
    """The module-level name the file selects its device into, or ``device``."""
    for stmt in ctx.tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            value = stmt.value
            if isinstance(value, ast.Call) and ctx.qualname(value.func) in (
                "torch.device",
                "torchport.default_device",
            ):
                return stmt.targets[0].id
    return "device"


def _has_selection(ctx: FileContext, name: str) -> bool:
    return any(
        isinstance(stmt, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets)
        for stmt in ctx.tree.body
    )


def _has_main_guard(unit: Unit) -> bool:
    for stmt in unit.ctx.tree.body:
        if isinstance(stmt, ast.If) and "__main__" in unit.ctx.text(stmt.test):
            return True
    return False
