"""Static detectors of device state fixed too early (TP118-TP120): a generator left on the CPU,
a device recorded in ``__init__``, an optimizer state loaded before its model moves.

Each starts with a text test, so files without the pattern (most of them) cost nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.analyze import kinds as K
from torchport.analyze.checks.base import Analysis, detector
from torchport.analyze.checks.values import assigned_value, parameter_defaults
from torchport.analyze.context import Func, is_self_attr, walk_local
from torchport.analyze.infer import device_of, keyword
from torchport.findings import Finding, Fix, Location
from torchport.rules import device as R

# --- TP118 -----------------------------------------------------------------------------------

_GENERATORS = {"torch.Generator", "torch._C.Generator"}
_GLOBAL_SEEDS = {"torch.manual_seed", "torch.random.manual_seed"}
_DRAWS = {
    f"torch.{n}"
    for n in (
        "rand",
        "randn",
        "randint",
        "randperm",
        "normal",
        "bernoulli",
        "multinomial",
        "poisson",
        "rand_like",
        "randn_like",
        "randint_like",
    )
}
_DRAW_METHODS = (
    "normal_",
    "uniform_",
    "random_",
    "bernoulli_",
    "exponential_",
    "geometric_",
    "cauchy_",
    "log_normal_",
    "multinomial",
    "bernoulli",
)
_DEPTH = 4  # assignments, parameters and callers followed back to the generator


@detector(R.CpuGeneratorForDeviceTensor)
def cpu_generator_for_device_tensor(a: Analysis) -> Iterator[Finding]:
    if "generator=" not in a.source:
        return
    for call in a.calls:
        given = keyword(call, "generator")
        if given is None:
            continue
        where = _draw_device(a, call)
        if where is None:
            continue
        made = _cpu_generator(a, given, call.lineno, 0)
        if made is None:
            continue
        yield R.CpuGeneratorForDeviceTensor.finding(
            f"`{a.name(given)}` is a CPU generator (`{a.name(made)}`, line {made.lineno}) "
            f"but `{a.name(call.func)}` draws on {where}: CUDA raises \"Expected a 'cuda' "
            'device type for generator"; create it with `torch.Generator(device=...)`',
            a.loc(call),
            Fix("create the generator on the tensor's device: `torch.Generator(device=...)`"),
            related=(a.loc(made),),
        )


def _draw_device(a: Analysis, call: ast.Call) -> str | None:
    """How to name the device a random call draws on, when it may be an accelerator."""
    func = call.func
    if a.qualname(func) not in _DRAWS:
        if not isinstance(func, ast.Attribute) or func.attr not in _DRAW_METHODS:
            return None
        return _moved(a, func.value)
    device = keyword(call, "device")
    if device is not None:
        if isinstance(device, ast.Constant) and device.value is None:
            return None
        place = device_of(a.scope(call), device, call.lineno)
        if place == "cpu":
            return None
        if place is None and isinstance(device, ast.Attribute) and device.attr == "device":
            # ``device=points.device``: only where the file's calls hand it a device tensor
            # (an augmentation of CPU samples in a Dataset draws on the CPU)
            return f"`{a.name(device)}`" if a.placed_on_device(device.value) else None
        return f"`{a.name(device)}`"
    return next((m for m in (_moved(a, arg) for arg in call.args[:2]) if m), None)


def _moved(a: Analysis, tensor: ast.expr) -> str | None:
    info = a.info(tensor)
    if info is None or info.kind != K.TENSOR or info.device != "accel":
        return None
    return f"the device of `{a.name(tensor)}`"


def _cpu_generator(a: Analysis, expr: ast.expr, line: int, depth: int) -> ast.Call | None:
    """The ``torch.Generator(...)`` call on the CPU that ``expr`` evidently holds, if any."""
    if depth > _DEPTH:
        return None
    if isinstance(expr, ast.Call):
        func = expr.func
        q = a.qualname(func)
        if q in _GLOBAL_SEEDS:
            return expr  # seeds every device and returns the default CPU generator
        if isinstance(func, ast.Attribute) and func.attr == "manual_seed":
            return _cpu_generator(a, func.value, line, depth + 1)  # returns the generator
        if q not in _GENERATORS:
            return None
        device = keyword(expr, "device") or (expr.args[0] if expr.args else None)
        on_cpu = device is None or device_of(a.scope(expr), device, expr.lineno) == "cpu"
        return expr if on_cpu else None
    if isinstance(expr, ast.Name):
        return _named_generator(a, expr, line, depth)
    if (
        isinstance(expr, ast.Attribute)
        and isinstance(expr.value, ast.Name)
        and expr.value.id == "self"
    ):
        return _attribute_generator(a, expr, depth)
    return None


def _named_generator(a: Analysis, name: ast.Name, line: int, depth: int) -> ast.Call | None:
    bound = assigned_value(a, name, line)
    if bound is not None:
        return _cpu_generator(a, bound, bound.lineno, depth + 1)
    func = a.function_of(name)
    if func is not None and name.id in _parameter_names(func):
        return _passed_generator(a, func, name.id, depth)
    # a closure or a global: the last value bound in an enclosing function or the module
    for owner in [*(up for up in a.ancestors(name) if isinstance(up, Func)), a.tree]:
        if owner is func:
            continue
        values = a.assignments(owner).get(name.id)
        if values:
            value = values[-1][1]
            return _cpu_generator(a, value, value.lineno, depth + 1)
    return None


def _parameter_names(func: Func) -> list[str]:
    args = func.args
    return [p.arg for p in [*args.posonlyargs, *args.args, *args.kwonlyargs]]


def _passed_generator(a: Analysis, func: Func, param: str, depth: int) -> ast.Call | None:
    """A CPU generator given to ``param``: its default, or what a same-file caller passes."""
    positional = [*func.args.posonlyargs, *func.args.args]
    defaults = parameter_defaults(func)
    if param in defaults:
        made = _cpu_generator(a, defaults[param], func.lineno, depth + 1)
        if made is not None:
            return made
    callee, skip = func.name, 0
    if a.functions.get(func.name) is not func:
        cls = a.class_of(func)
        if func.name != "__init__" or cls is None:
            return None  # only functions and classes are called by their bare name
        callee, skip = cls.name, 1  # ``RandomJitter(0.01, generator)`` passes no ``self``
    index = next((i - skip for i, p in enumerate(positional) if p.arg == param), None)
    for call in a.calls:
        if not isinstance(call.func, ast.Name) or call.func.id != callee:
            continue
        passed = keyword(call, param)
        if passed is None and index is not None and index < len(call.args):
            passed = call.args[index]
        made = None if passed is None else _cpu_generator(a, passed, call.lineno, depth + 1)
        if made is not None:
            return made
    return None


def _attribute_generator(a: Analysis, attr: ast.Attribute, depth: int) -> ast.Call | None:
    """``self.gen``: a CPU generator when every assignment of it in the class makes one."""
    func = a.function_of(attr)
    cls = a.class_of(func) if func is not None else None
    if cls is None:
        return None
    values = list(_self_assignments(cls, attr.attr))
    made = [_cpu_generator(a, v, v.lineno, depth + 1) for v in values]
    return made[0] if made and all(m is not None for m in made) else None


def _self_assignments(cls: ast.ClassDef, attr: str) -> Iterator[ast.expr]:
    """The values of ``self.<attr> = value`` in the methods of ``cls``."""
    for method in cls.body:
        if not isinstance(method, Func):
            continue
        for node in ast.walk(method):
            if isinstance(node, ast.Assign) and any(is_self_attr(t, attr) for t in node.targets):
                yield node.value


# --- TP119 -----------------------------------------------------------------------------------

_OVERRIDES = {"to", "cuda", "_apply"}  # a class with one of these may keep its device current
_HOLDERS = {"parameters", "buffers"}
_WEIGHTS = {"weight", "bias"}


@detector(R.DeviceCapturedInInit)
def device_captured_in_init(a: Analysis) -> Iterator[Finding]:
    if ".device" not in a.source and "cpu" not in a.source:
        return
    for name in sorted(a.module_classes):
        cls = a.classes[name]
        init = a.method(cls, "__init__")
        defined = {m.name for m in cls.body if isinstance(m, Func)}
        if init is None or defined & _OVERRIDES:
            continue
        for stmt in ast.walk(init):
            if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
                continue
            target = stmt.targets[0]
            if not isinstance(target, ast.Attribute) or not is_self_attr(target, target.attr):
                continue
            attr = target.attr
            value = _default_kept(a, init, stmt.value)
            if attr in defined or not _captures_device(a, value):
                continue  # a property (or method) of that name is read when it is needed
            if _assigned_elsewhere(a, cls, init, attr):
                continue
            uses = _device_uses(a, cls, init, attr)
            if not uses:
                continue
            # reported where the stale device is used (where a tensor lands on the CPU), with
            # the line that captured it
            yield R.DeviceCapturedInInit.finding(
                f"`self.{attr}` is used as a device here, but it was computed in "
                f"`{name}.__init__` (line {stmt.lineno}), before the module is moved, and stays "
                "the CPU after `.to(device)`: read the device when it is needed (an input's "
                "`.device`, or a property)",
                uses[0],
                Fix(f"make `{attr}` a property that returns `next(self.parameters()).device`"),
                related=(a.loc(stmt), *uses[1:]),
            )


def _default_kept(a: Analysis, init: Func, value: ast.expr) -> ast.expr:
    """A parameter of ``__init__`` that every call of the file leaves out (``device="cpu"``):
    its default; anything else as it is."""
    if not isinstance(value, ast.Name):
        return value
    default = parameter_defaults(init).get(value.id)
    given = a.given(init, value.id)
    if default is None or not given or any(g is not None for g in given):
        return value
    return default


def _captures_device(a: Analysis, value: ast.expr) -> bool:
    """``next(self.parameters()).device``, ``self.fc.weight.device``, ``torch.device("cpu")``."""
    if isinstance(value, ast.Constant) or (
        isinstance(value, ast.Call) and a.qualname(value.func) == "torch.device"
    ):
        return device_of(a.scope(value), value, value.lineno) == "cpu"
    if not isinstance(value, ast.Attribute) or value.attr != "device":
        return False
    inner = value.value
    if isinstance(inner, ast.Attribute):
        return inner.attr in _WEIGHTS and _rooted_at_self(inner.value)
    if not (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name)):
        return False
    if inner.func.id != "next" or len(inner.args) != 1:
        return False
    source = inner.args[0]
    if isinstance(source, ast.Call) and isinstance(source.func, ast.Name):
        if source.func.id != "iter" or len(source.args) != 1:
            return False
        source = source.args[0]
    return (
        isinstance(source, ast.Call)
        and isinstance(source.func, ast.Attribute)
        and source.func.attr in _HOLDERS
        and _rooted_at_self(source.func.value)
    )


def _rooted_at_self(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id == "self"


def _assigned_elsewhere(a: Analysis, cls: ast.ClassDef, init: Func, attr: str) -> bool:
    """Whether another method of ``cls`` assigns ``self.<attr>``, or code outside a class
    assigns ``<obj>.<attr>`` (either may keep it current), or the file uses ``setattr``."""
    for node in a.of_type(ast.Assign):
        assert isinstance(node, ast.Assign)
        func = a.function_of(node)
        if func is init:
            continue
        for target in node.targets:
            if not isinstance(target, ast.Attribute) or target.attr != attr:
                continue
            if not is_self_attr(target, attr) or (func is not None and a.class_of(func) is cls):
                return True
    return any(isinstance(c.func, ast.Name) and c.func.id == "setattr" for c in a.calls)


def _device_uses(a: Analysis, cls: ast.ClassDef, init: Func, attr: str) -> list[Location]:
    """Where the class's other methods pass ``self.<attr>`` as a device."""
    out: list[Location] = []
    for method in cls.body:
        if not isinstance(method, Func) or method is init:
            continue
        for node in ast.walk(method):
            if not isinstance(node, ast.Call):
                continue
            given = [k.value for k in node.keywords if k.arg == "device"]
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("to", "cuda") and node.args:
                given.append(node.args[0])
            if any(is_self_attr(g, attr) for g in given):
                out.append(a.loc(node))
    return out


# --- TP120 -----------------------------------------------------------------------------------


@detector(R.OptimizerStateLoadedBeforeMove)
def optimizer_state_loaded_before_move(a: Analysis) -> Iterator[Finding]:
    if not a.device_moves:
        return
    yield from _eager_state_before_move(a)
    if "load_state_dict" not in a.source:
        return
    for call, optimizer in _optimizer_loads(a):
        owner = a.function_of(call) or a.tree
        model = _optimized_model(a, owner, optimizer, call.lineno)
        if model is None:
            continue
        moved = None
        if not _moved_before(a, owner, model, call.lineno):
            moved = _moved_later(a, owner, model, call.lineno) or _moved_by_caller(a, owner, model)
        if moved is None:
            continue
        yield R.OptimizerStateLoadedBeforeMove.finding(
            f"`{a.name(call)}` loads the state of `{optimizer}` while `{model.id}` is still on "
            f"the CPU (it is moved on line {moved.lineno}): the state is cast to the CPU and "
            f"stays there, so `{optimizer}.step()` fails on the GPU; move `{model.id}` before "
            "building and loading the optimizer",
            a.loc(call),
            Fix(f"move `{model.id}` to the device before the optimizer is built"),
            related=(a.loc(moved),),
        )

    yield from _attribute_loads(a)


# Optimizers that make their state when built, on each parameter's device (Adagrad's "sum"):
# built before the model moves, the state stays on the CPU and the first step fails
_EAGER_STATE = ("torch.optim.Adagrad",)


def _eager_state_before_move(a: Analysis) -> Iterator[Finding]:
    for call in a.call_named(*_EAGER_STATE):
        model = _parameters_owner(call)
        if model is None:
            continue
        owner = a.function_of(call) or a.tree
        moved = None
        if not _moved_before(a, owner, model, call.lineno):
            moved = _moved_later(a, owner, model, call.lineno) or _moved_by_caller(a, owner, model)
            moved = moved or _attribute_moved_elsewhere(a, owner, model.id)
        if moved is None or _state_reloaded_after(a, moved):
            continue
        yield R.OptimizerStateLoadedBeforeMove.finding(
            f"`{a.name(call)}` is built while `{model.id}` is still on the CPU (it is moved on "
            f"line {moved.lineno}): it makes its state when built, on the CPU, and moving the "
            "model does not move it, so the first step fails on the GPU; move the model first",
            a.loc(call),
            Fix(f"move `{model.id}` to the device before building the optimizer"),
            related=(a.loc(moved),),
        )


def _state_reloaded_after(a: Analysis, move: ast.Call) -> bool:
    """``opt.load_state_dict(...)`` after the move in the same function: loading casts the
    state to each parameter's device (``opt.load_state_dict(opt.state_dict())``)."""
    owner = a.function_of(move) or a.tree
    return any(
        call.lineno > move.lineno and (a.function_of(call) or a.tree) is owner
        for call, _ in a.method_calls("load_state_dict")
    )


def _attribute_moved_elsewhere(a: Analysis, owner: ast.AST, name: str) -> ast.Call | None:
    """``self.model = model`` in ``owner`` (a constructor), and ``self.model.to(device)`` in
    another method of the class (``set_devices``)."""
    cls = a.class_of(owner)
    if cls is None:
        return None
    kept = [
        t.attr
        for n in walk_local(owner)
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id == name
        for t in n.targets
        if isinstance(t, ast.Attribute) and is_self_attr(t)
    ]
    methods = [m for m in cls.body if isinstance(m, ast.FunctionDef) and m is not owner]
    for attr in kept:
        for method in methods:
            moved = _attribute_moved_after(a, method, attr, 0)
            if moved is not None:
                return moved
    return None


def _attribute_loads(a: Analysis) -> Iterator[Finding]:
    """The same in a trainer class: ``self.optimizer.load_state_dict(...)`` in a method (a
    ``_resume()`` helper), ``self.model.to(device)`` after it or after the call of it."""
    for call, func in a.method_calls("load_state_dict"):
        if not is_self_attr(func.value):
            continue
        method = a.function_of(call)
        cls = a.class_of(method) if method is not None else None
        if method is None or cls is None:
            continue
        model = _attribute_model(a, cls, func.value.attr)  # type: ignore[attr-defined]
        if model is None:
            continue
        callers = [
            c
            for c in a.calls
            if is_self_attr(c.func, method.name) and a.class_of(a.function_of(c) or a.tree) is cls
        ]
        for owner, after in [(method, call), *((a.function_of(c), c) for c in callers)]:
            moved = _attribute_moved_after(a, owner, model, after.lineno)
            if moved is None:  # moved by a method called later: `self.setup()`
                moved = _moved_by_later_method(a, owner, model, after.lineno)
            if owner is None or moved is None:
                continue
            yield R.OptimizerStateLoadedBeforeMove.finding(
                f"`{a.name(call)}` loads the optimizer's state while `self.{model}` is still "
                f"on the CPU (it is moved on line {moved.lineno}): the state stays on the CPU, "
                f"so the first step fails on the GPU; move `self.{model}` first",
                a.loc(call),
                Fix(f"move `self.{model}` to the device before loading the optimizer's state"),
                related=tuple(sorted({a.loc(moved), a.loc(after)}, key=lambda loc: loc.line)),
            )
            break


def _attribute_model(a: Analysis, cls: ast.ClassDef, optimizer: str) -> str | None:
    """``model`` of ``self.<optimizer> = torch.optim.X(self.model.parameters(), ...)``."""
    for node in ast.walk(cls):
        if not (
            isinstance(node, ast.Assign)
            and any(is_self_attr(t, optimizer) for t in node.targets)
            and isinstance(node.value, ast.Call)
            and (a.qualname(node.value.func) or "").startswith("torch.optim.")
        ):
            continue
        for inner in ast.walk(node.value):
            if (
                isinstance(inner, ast.Call)
                and isinstance(inner.func, ast.Attribute)
                and inner.func.attr in ("parameters", "named_parameters")
                and isinstance(inner.func.value, ast.Attribute)
                and is_self_attr(inner.func.value)
            ):
                return inner.func.value.attr
    return None


def _attribute_moved_after(
    a: Analysis, owner: ast.AST | None, model: str, line: int
) -> ast.Call | None:
    """The first ``self.<model>.to(...)``/``.cuda()`` in ``owner`` after ``line``, unless
    one came before it."""
    if owner is None:
        return None
    moves = sorted(
        (
            n
            for n in walk_local(owner)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("to", "cuda")
            and is_self_attr(n.func.value, model)
        ),
        key=lambda n: n.lineno,
    )
    assigned_moved = (  # `self.model = model.to(device)`
        n
        for n in walk_local(owner)
        if isinstance(n, ast.Assign)
        and any(is_self_attr(t, model) for t in n.targets)
        and any(
            isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
            and c.func.attr in ("to", "cuda")
            for c in ast.walk(n.value)
        )
    )  # fmt: skip
    if any(m.lineno < line for m in moves) or any(n.lineno < line for n in assigned_moved):
        return None
    return next((m for m in moves if m.lineno > line), None)


def _moved_by_later_method(
    a: Analysis, owner: ast.AST | None, model: str, line: int
) -> ast.Call | None:
    """The move of ``self.<model>`` in a method of the same class that ``owner`` calls after
    ``line`` (``self.setup()``), when nothing moved it before that call."""
    if owner is None or _attribute_moved_after(a, owner, model, 0) is not None:
        return None
    for call in walk_local(owner):
        if isinstance(call, ast.Call) and call.lineno > line and is_self_attr(call.func):
            moved = _attribute_moved_after(a, a.own_callee(call), model, 0)
            if moved is not None:
                return moved
    return None


def _optimizer_loads(a: Analysis) -> Iterator[tuple[ast.Call, str]]:
    """``opt.load_state_dict(...)``, and calls of same-file helpers that do it to an argument
    (``load_checkpoint(path, model, optimizer)``), with the name of what is loaded."""
    helpers: dict[str, list[tuple[int, str]]] = {}
    for call, func in a.method_calls("load_state_dict"):
        if not isinstance(func.value, ast.Name):
            continue
        name = func.value.id
        yield call, name
        owner = a.function_of(call)
        if owner is not None and a.functions.get(owner.name) is owner:
            params = [p.arg for p in owner.args.args]
            if name in params:
                helpers.setdefault(owner.name, []).append((params.index(name), name))
    if not helpers:
        return
    for call in a.calls:
        callee = call.func
        if not isinstance(callee, ast.Name) or callee.id not in helpers:
            continue
        for index, param in helpers[callee.id]:
            passed = keyword(call, param) or (call.args[index] if index < len(call.args) else None)
            if isinstance(passed, ast.Name):
                yield call, passed.id


def _optimized_model(a: Analysis, owner: ast.AST, optimizer: str, line: int) -> ast.Name | None:
    """The model whose parameters ``optimizer`` was built from in ``owner``, before ``line``."""
    made = [value for at, value in a.assignments(owner).get(optimizer, []) if at < line]
    if not made or not isinstance(made[-1], ast.Call):
        return None
    value = made[-1]
    q = a.qualname(value.func)
    if q is None:
        if not _named_like_optimizer(optimizer):
            return None
    elif not q.startswith("torch.optim.") or "lr_scheduler" in q or "swa_utils" in q:
        return None
    model = _parameters_owner(value)
    if model is not None:
        return model
    for arg in value.args:  # a helper that builds the optimizer from the model itself
        info = a.info(arg) if isinstance(arg, ast.Name) else None
        if isinstance(arg, ast.Name) and info is not None and info.kind == K.MODULE:
            return arg
    return None


def _parameters_owner(optimizer: ast.Call) -> ast.Name | None:
    """``model`` of ``torch.optim.X(model.parameters(), ...)`` (or ``named_parameters``)."""
    for node in ast.walk(optimizer):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("parameters", "named_parameters")
            and isinstance(node.func.value, ast.Name)
        ):
            return node.func.value
    return None


def _named_like_optimizer(name: str) -> bool:
    lower = name.lower()
    return "optim" in lower or lower == "opt" or lower.startswith("opt_") or lower.endswith("_opt")


def _moved_by_caller(a: Analysis, owner: ast.AST, model: ast.Name) -> ast.Call | None:
    """A helper that builds the model, loads the optimizer and returns the model unmoved
    (``encoder, opt = build_from_checkpoint(path)``): its caller's move of what it got."""
    if not isinstance(owner, ast.FunctionDef) or a.functions.get(owner.name) is not owner:
        return None
    index = _returned_at(owner, model.id)
    if index is None:
        return None
    for call in a.calls:
        if not (isinstance(call.func, ast.Name) and call.func.id == owner.name):
            continue
        stmt = a.parents.get(call)
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            continue
        target = stmt.targets[0]
        names = target.elts if isinstance(target, ast.Tuple) else [target]
        got = names[index] if index < len(names) else None
        if isinstance(got, ast.Name):
            caller = a.function_of(call) or a.tree
            moved = _moved_later(a, caller, got, call.lineno)
            if moved is not None:
                return moved
    return None


def _returned_at(func: ast.FunctionDef, name: str) -> int | None:
    """Where ``name`` sits in what ``func`` returns: 0 for ``return name``, its position in
    ``return a, name, b``; None when a return does not hand it back."""
    positions = set()
    for node in walk_local(func):
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
        at = [i for i, v in enumerate(values) if isinstance(v, ast.Name) and v.id == name]
        if not at:
            return None
        positions.add(at[0])
    return positions.pop() if len(positions) == 1 else None


def _moved_before(a: Analysis, owner: ast.AST, model: ast.Name, line: int) -> bool:
    """Whether ``model`` is on the device at ``line``: bound to a move, or moved since."""
    bound = [(at, v) for at, v in a.assignments(owner).get(model.id, []) if at <= model.lineno]
    since = bound[-1][0] if bound else 0
    moves = [call for call, _ in a.device_moves]
    if bound and bound[-1][1] in moves:
        return True
    return any(
        isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == model.id
        and (a.function_of(call) or a.tree) is owner
        and since <= call.lineno < line
        for call in moves
    )


def _moved_later(a: Analysis, owner: ast.AST, model: ast.Name, line: int) -> ast.Call | None:
    """The first move of ``model`` to a device after ``line``, unless it was already moved
    between its binding (the one the optimizer saw) and ``line``."""
    if _moved_before(a, owner, model, line):
        return None
    for call, _ in a.device_moves:
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        if not isinstance(receiver, ast.Name) or receiver.id != model.id:
            continue
        if (a.function_of(call) or a.tree) is owner and call.lineno > line:
            return call
    return None
