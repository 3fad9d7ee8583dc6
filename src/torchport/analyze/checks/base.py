"""The per-file analysis every detector receives, and the detector registry."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from functools import cached_property

from torchport.analyze import kinds as K
from torchport.analyze.context import FileContext
from torchport.analyze.edits import location
from torchport.analyze.hot import forward_nodes, hot_nodes
from torchport.analyze.infer import device_of, keyword
from torchport.findings import Finding, Location
from torchport.rules import Rule


class Analysis(FileContext):
    """A FileContext plus the file-wide facts that several rules share (computed on demand)."""

    @cached_property
    def hot(self) -> set[ast.AST]:
        return hot_nodes(self)

    @cached_property
    def forward(self) -> dict[ast.AST, str]:
        return forward_nodes(self)

    @cached_property
    def device_moves(self) -> list[tuple[ast.Call, K.Info | None]]:
        """``.to(accel)``/``.cuda()`` calls and what they were called on."""
        out: list[tuple[ast.Call, K.Info | None]] = []
        for call in self.calls:
            func = call.func
            if not isinstance(func, ast.Attribute) or func.attr not in ("to", "cuda"):
                continue
            if func.attr == "to":
                target = keyword(call, "device") or (call.args[0] if call.args else None)
                if device_of(self.scope(call), target, call.lineno) != "accel":
                    continue
            out.append((call, self.info(func.value)))
        return out

    @cached_property
    def uses_accelerator(self) -> bool:
        """Whether the file moves anything to a device that may be an accelerator."""
        if self.device_moves:
            return True
        return any(
            device_of(self.scope(c), keyword(c, "device"), c.lineno) == "accel" for c in self.calls
        )

    @cached_property
    def moves_batches(self) -> bool:
        return any(info is not None and info.batch for _, info in self.device_moves)

    @cached_property
    def makes_scaler(self) -> bool:
        return "GradScaler" in self.source and any(self.call_named(*K.GRAD_SCALERS))

    @cached_property
    def has_fallback(self) -> bool:
        """Whether the file ever asks if an accelerator is there (so "cuda" is not hard-coded)."""
        return "is_available" in self.source or "device_count" in self.source

    def loc(self, node: ast.AST) -> Location:
        return location(self, node)

    def is_hot(self, node: ast.AST) -> bool:
        return node in self.hot

    def name(self, node: ast.AST) -> str:
        text = self.text(node)
        return text if len(text) <= 40 else text[:37] + "..."

    def call_named(self, *qualified: str) -> Iterable[ast.Call]:
        wanted = set(qualified)
        return (c for c in self.calls if self.qualname(c.func) in wanted)

    def method_calls(self, *names: str) -> Iterable[tuple[ast.Call, ast.Attribute]]:
        for call in self.calls:
            if isinstance(call.func, ast.Attribute) and call.func.attr in names:
                yield call, call.func


Detector = Callable[[Analysis], Iterable[Finding]]
DETECTORS: dict[str, tuple[type[Rule], Detector]] = {}


def detector(rule: type[Rule]) -> Callable[[Detector], Detector]:
    """Register ``func`` as the static detector of ``rule``."""

    def wrap(func: Detector) -> Detector:
        if rule.code in DETECTORS:
            raise ValueError(f"two static detectors for {rule.code}")
        DETECTORS[rule.code] = (rule, func)
        return func

    return wrap
