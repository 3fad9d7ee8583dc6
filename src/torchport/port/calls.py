"""Expression-level rewrites: each looks at one call and decides alone.

- a tensor factory inside ``forward`` or a helper gets ``device=<input>.device``;
- ``torch.load`` gets ``map_location``; ``.numpy()`` gets ``.detach().cpu()`` first;
- ``.cuda()``, ``.to("cuda")`` and ``device="cuda:0"`` use the selected device;
- DataLoaders pin memory when CUDA is there; float64 NumPy data is cast where it enters torch;
- ``torch.cuda.amp``/``torch.cpu.amp`` become ``torch.amp``.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from torchport.findings import Finding, Location, Severity
from torchport.port import snippets
from torchport.port.facts import NUMPY_ENTRIES, Facts, qualified, target_key
from torchport.port.options import PortOptions
from torchport.port.scopes import Scope
from torchport.rules.device import UndecidableDevicePlacement

FACTORIES = frozenset(
    f"torch.{name}"
    for name in (
        "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange",
        "linspace", "logspace", "eye", "tensor", "as_tensor",
    )
)  # fmt: skip
LEGACY = frozenset(
    {"torch.FloatTensor", "torch.LongTensor", "torch.DoubleTensor", "torch.Tensor",
     "torch.set_default_tensor_type", "torch.cuda.FloatTensor", "torch.cuda.LongTensor"}
)  # fmt: skip
DEPRECATED_AMP = {
    "torch.cuda.amp.autocast": ("cuda", ("enabled", "dtype", "cache_enabled")),
    "torch.cuda.amp.GradScaler": ("cuda", ()),
    "torch.cpu.amp.autocast": ("cpu", ("enabled", "dtype", "cache_enabled")),
    "torch.cpu.amp.GradScaler": ("cpu", ()),
}
CAST_METHODS = frozenset({"float", "to", "type", "half", "bfloat16", "double"})


def is_accelerator_literal(node: cst.BaseExpression) -> bool:
    if not isinstance(node, cst.SimpleString):
        return False
    value = node.evaluated_value
    return isinstance(value, str) and value.split(":")[0] in ("cuda", "mps", "xpu")


class CallRewrites(cst.CSTTransformer):
    """Base of the port transformer: the per-call rewrites and the state they share."""

    def __init__(self, facts: Facts, options: PortOptions, path: str) -> None:
        super().__init__()
        self.path = path
        self.facts = facts
        self.options = options
        self.device = facts.device_name or "device"
        self.uses_device = False
        self.scopes: list[Scope] = []
        self.notes: list[Finding] = []
        self._cast_already: set[int] = set()
        # DataLoader calls that torchport.DeviceLoader wraps (it pins and copies them itself).
        self._device_loaded: set[int] = set()

    @property
    def scope(self) -> Scope:
        return self.scopes[-1]

    def note(self, node: cst.CSTNode, message: str, severity: Severity | None = None) -> None:
        """Report what was left unchanged (or changed with a consequence) at ``node``."""
        pos = self.get_metadata(PositionProvider, node, None)
        line, column = (pos.start.line, pos.start.column) if pos else (0, 0)
        location = Location(self.path, line, column)
        self.notes.append(UndecidableDevicePlacement.finding(message, location, severity=severity))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in CAST_METHODS:
            # ``torch.from_numpy(a).float()`` is already cast: remember the inner call.
            self._cast_already.add(id(func.value))
        if qualified(self, func) == "torchport.DeviceLoader" and node.args:
            self._device_loaded.add(id(node.args[0].value))

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        qname = qualified(self, original_node.func) or ""
        if qname in LEGACY:
            self.note(original_node, f"legacy `{qname}` always makes CPU tensors: use "
                      "torch.tensor/torch.zeros(..., device=device) instead")  # fmt: skip
            return updated_node
        if qname in DEPRECATED_AMP:
            return self._amp(updated_node, qname)
        if qname == "torch.nn.DataParallel" and not self.options.distributed:
            message = "nn.DataParallel is kept (one device is used as before); port with "
            self.note(original_node, message + "--distributed for a DDP script", Severity.INFO)
        updated = self._device_arguments(self._moved_at_use(updated_node))
        if qname in FACTORIES and self.scopes and self.scope.factory_scope:
            updated = self._factory(original_node, updated, qname)
        elif qname == "torch.from_numpy" and self.scopes and self.scope.factory_scope:
            self.note(original_node, "`torch.from_numpy` inside the model makes a CPU tensor: "
                      "convert the data before it reaches the model")  # fmt: skip
        if qname in NUMPY_ENTRIES and self._is_float64_entry(original_node):
            return snippets.method(updated, "float")
        return self._method_rewrites(self._loading(original_node, updated, qname))

    def _loading(self, original: cst.Call, call: cst.Call, qname: str) -> cst.Call:
        """``torch.load`` maps to the device; loaders pin memory when there is CUDA to feed."""
        if qname == "torch.load" and len(call.args) < 2:
            if snippets.has_keyword(call, "map_location"):
                return call
            self.uses_device = True
            return snippets.add_args(call, snippets.keyword("map_location", self.device))
        is_loader = qname.startswith("torch.") and qname.endswith(".DataLoader")
        if id(original) in self._device_loaded:
            return call
        if is_loader and not snippets.has_keyword(call, "pin_memory"):
            pin = snippets.keyword("pin_memory", "torch.cuda.is_available()")
            return snippets.add_args(call, pin)
        return call

    def _moved_at_use(self, call: cst.Call) -> cst.Call:
        """``model(x)`` -> ``model(x.to(device))`` for data that must also stay on the host."""
        if not self.scopes or not isinstance(call.func, cst.Name):
            return call
        scope = self.scope
        if call.func.value not in scope.callables:
            return call
        args = list(call.args)
        for i, arg in enumerate(args):
            if isinstance(arg.value, cst.Name) and arg.value.value in scope.move_at_use:
                self.uses_device = True
                args[i] = arg.with_changes(value=snippets.to_device(arg.value, self.device))
        return call.with_changes(args=args)

    def _method_rewrites(self, call: cst.Call) -> cst.BaseExpression:
        func = call.func
        if not isinstance(func, cst.Attribute):
            return call
        name = func.attr.value
        if name == "numpy" and not call.args:
            return self._numpy(call, func.value)
        if name == "cuda" and not (
            isinstance(func.value, cst.Name) and func.value.value == "torch"
        ):
            self.uses_device = True
            extra = [a for a in call.args if a.keyword and a.keyword.value == "non_blocking"]
            device = cst.Arg(cst.Name(self.device))
            if extra:
                device = device.with_changes(comma=snippets.comma())
            renamed = func.with_changes(attr=cst.Name("to"))
            return call.with_changes(func=renamed, args=[device, *extra])
        return call

    def _numpy(self, call: cst.Call, receiver: cst.BaseExpression) -> cst.BaseExpression:
        last = snippets.final_method(receiver)
        if last == "cpu" or (
            isinstance(receiver, cst.Call) and qualified(self, receiver.func) == "torch.from_numpy"
        ):
            return call
        if last != "detach":
            receiver = snippets.method(receiver, "detach")
        return snippets.method(snippets.method(receiver, "cpu"), "numpy")

    def _device_arguments(self, call: cst.Call) -> cst.Call:
        """``.to("cuda")``, ``device="cuda:0"`` and ``torch.device("cuda")`` arguments."""
        args = list(call.args)
        changed = False
        for i, arg in enumerate(args):
            is_device_arg = (arg.keyword is not None and arg.keyword.value == "device") or (
                i == 0
                and arg.keyword is None
                and isinstance(call.func, cst.Attribute)
                and call.func.attr.value == "to"
            )
            if is_device_arg and is_accelerator_literal(arg.value):
                args[i] = arg.with_changes(value=cst.Name(self.device))
                changed = True
        if changed:
            self.uses_device = True
            return call.with_changes(args=args)
        return call

    def _factory(self, original: cst.Call, call: cst.Call, qname: str) -> cst.Call:
        if snippets.has_keyword(call, "device") or snippets.has_keyword(call, "out"):
            return call
        param = self.scope.tensor_param
        if param is None:
            where = f"`{qname}` in `{self.scope.name}`"
            self.note(original, f"{where} makes a CPU tensor and no argument tells the device: "
                      "pass the device (or an input tensor) in")  # fmt: skip
            return call
        return snippets.add_args(call, snippets.keyword("device", f"{param}.device"))

    def _is_float64_entry(self, call: cst.Call) -> bool:
        if id(call) in self._cast_already or not call.args or len(call.args) > 1:
            return False
        data = call.args[0].value
        if id(data) in self.facts.float64_entries:
            return True
        if isinstance(data, cst.Subscript):
            data = data.value
        return target_key(data) in self.facts.float64_keys

    def _amp(self, call: cst.Call, qname: str) -> cst.Call:
        device_type, positional = DEPRECATED_AMP[qname]
        args = list(call.args)
        for i, arg in enumerate(args):
            if arg.keyword is None and i < len(positional):
                args[i] = arg.with_changes(
                    keyword=cst.Name(positional[i]), equal=snippets.keyword("x", "0").equal
                )
        first = cst.Arg(cst.SimpleString(f'"{device_type}"'))
        if args:
            first = first.with_changes(comma=snippets.comma())
        func = call.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Attribute):
            # torch.cuda.amp.X -> torch.amp.X (keeping whatever name torch goes by here)
            amp_mod = func.value
            if isinstance(amp_mod.value, cst.Attribute):
                func = func.with_changes(value=amp_mod.with_changes(value=amp_mod.value.value))
        return call.with_changes(func=func, args=[first, *args])

    def leave_ImportFrom(
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ) -> cst.ImportFrom:
        module = updated_node.module
        if module is None:
            return updated_node
        dotted = cst.Module(body=[]).code_for_node(module)
        if dotted in ("torch.cuda.amp", "torch.cpu.amp"):
            return updated_node.with_changes(module=cst.parse_expression("torch.amp"))
        return updated_node
