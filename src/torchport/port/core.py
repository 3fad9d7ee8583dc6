"""Port one file's source text: parse, learn the facts, rewrite, add the device selection."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import libcst as cst

from torchport.findings import Finding
from torchport.port import snippets
from torchport.port.facts import FactsVisitor
from torchport.port.layout import ensure_imports, insert_after_imports
from torchport.port.options import PortOptions
from torchport.port.single import SinglePort


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
    """The ported text of ``source``; raises libcst.ParserSyntaxError on invalid Python."""
    module = cst.parse_module(source)
    wrapper = cst.MetadataWrapper(module)
    facts_visitor = FactsVisitor(set(known_module_classes))
    wrapper.visit(facts_visitor)
    facts = facts_visitor.facts
    port = SinglePort(facts, options, path)
    ported = wrapper.visit(port)
    if port.uses_device and facts.device_name is None:
        ported = _add_selection(ported, port.device, options, port.needs_helper)
    elif port.needs_helper and not _defines(ported, "to_device"):
        ported = _add_selection(ported, None, options, helper=True)
    notes = list(port.notes)
    after = ported.code
    if options.distributed:
        from torchport.port.distributed import distribute

        after, more = distribute(after, path, options)
        notes.extend(more)
    return PortResult(path, source, after, notes, entry_point=facts.has_main_guard)


def _defines(module: cst.Module, name: str) -> bool:
    return any(isinstance(s, cst.FunctionDef) and s.name.value == name for s in module.body)


def _add_selection(
    module: cst.Module, device: str | None, options: PortOptions, helper: bool
) -> cst.Module:
    needed = (
        ["import torch", "import torchport"] if options.runtime_dependency else ["import torch"]
    )
    module = ensure_imports(module, needed)
    added: list[snippets.Statement] = []
    if device is not None:
        added.extend(snippets.selection(device, options.runtime_dependency))
    if helper and not _defines(module, "to_device"):
        added.extend(snippets.batch_helper())
    return insert_after_imports(module, added)
