"""The hot loop: the body of a training or evaluation loop, and same-file code called from it.

A loop is hot when it iterates a DataLoader, or when its own body (not a nested loop's)
calls ``backward()``, ``optimizer.step()`` or a model, or a same-file function that does so
without a loop of its own (a trainer's ``_update(batch)``). Functions and methods of the same file
called from a hot loop (including a module's ``forward`` when the model is called, and the
methods of same-file objects: a meter's ``update``, a callback's ``on_step_end``) are hot too.

Inside ``def train(model, loader, optimizer)`` nothing says what the parameters hold; as
programs are written, a ``loader`` is iterated for batches and a ``model`` is called on them,
so those names make a loop hot.

Code guarded by ``if step % N == 0:`` (or run once) is not run at every step: it is not
followed into the functions it calls, and a sync there is what we tell users to do.
"""

from __future__ import annotations

import ast

from torchport.analyze import kinds as K
from torchport.analyze.context import FileContext, Func, is_self_attr, walk_local
from torchport.analyze.scope import loader_of
from torchport.analyze.walk import children, descendants

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# whether a same-file function makes a training step, by (function, depth): the loops of a
# file call the same few helpers again and again
_Steps = dict[tuple[Func, int], bool]


def hot_nodes(ctx: FileContext) -> set[ast.AST]:
    """Every node that runs once per step of some hot loop."""
    hot: set[ast.AST] = set()
    todo: list[Func] = []
    steps: _Steps = {}
    for node in ctx.of_type(*_LOOPS):
        assert isinstance(node, _LOOPS)
        if node not in hot and _is_hot(ctx, node, steps):
            _mark(ctx, node.body, hot, todo)
            todo.extend(_batch_generators(ctx, node))
    for comp in ctx.of_type(*_COMPREHENSIONS):
        # ``[step(b) for b in loader]``, ``sum(run(b) for b in loader)``: a loop over batches
        generators = getattr(comp, "generators", [])
        if comp not in hot and any(iterates_loader(ctx, g.iter) for g in generators):
            _mark(ctx, [comp], hot, todo)  # type: ignore[list-item]
    todo.extend(_hooks(ctx))
    seen: set[Func] = set()
    while todo:
        func = todo.pop()
        if func not in seen:
            seen.add(func)
            _mark(ctx, func.body, hot, todo)
    return hot


def _batch_generators(ctx: FileContext, loop: ast.AST) -> list[Func]:
    """``for s, a in buffer.minibatches(n, k)``: a generator of the file the hot loop draws its
    batches from runs (up to each ``yield``) once per step too."""
    iterable = getattr(loop, "iter", None)
    if not isinstance(iterable, ast.Call):
        return []
    return [
        func
        for func in _callees(ctx, iterable)
        if any(isinstance(n, ast.Yield | ast.YieldFrom) for n in walk_local(func))
    ]


# Hooks autograd or a module calls at every backward or forward: their bodies run every step.
_HOOK_REGISTRATIONS = frozenset(
    {"register_hook", "register_post_accumulate_grad_hook", "register_forward_hook",
     "register_forward_pre_hook", "register_full_backward_hook",
     "register_full_backward_pre_hook"}
)  # fmt: skip


def _hooks(ctx: FileContext) -> list[Func]:
    """The same-file functions registered as hooks: ``p.register_hook(self._check)``, or the
    function a factory of the file returns (``p.register_hook(self._make_hook(name))``)."""
    out: list[Func] = []
    for call in ctx.calls:
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr in _HOOK_REGISTRATIONS):
            continue
        for arg in call.args[:1]:
            if isinstance(arg, ast.Call):
                factory = ctx.own_callee(arg)
                if factory is not None:
                    out += [n for n in factory.body if isinstance(n, ast.FunctionDef)]
            elif isinstance(arg, ast.Name) and arg.id in ctx.functions:
                out.append(ctx.functions[arg.id])
            elif is_self_attr(arg):
                owner = ctx.function_of(call)
                cls = ctx.class_of(owner) if owner is not None else None
                method = ctx.method(cls, arg.attr) if cls is not None else None  # type: ignore[attr-defined]
                out += [method] if method is not None else []
    return out


def reached_from(ctx: FileContext, bodies: list[list[ast.stmt]]) -> set[ast.AST]:
    """Every node of these bodies and of the same-file functions they call, transitively (what
    runs inside an autocast block, a module's ``forward`` and its loss included)."""
    nodes: set[ast.AST] = set()
    todo: list[Func] = []
    for body in bodies:
        _mark(ctx, body, nodes, todo, every=True)
    seen: set[Func] = set()
    while todo:
        func = todo.pop()
        if func not in seen:
            seen.add(func)
            _mark(ctx, func.body, nodes, todo, every=True)
    return nodes


def _mark(
    ctx: FileContext,
    body: list[ast.stmt],
    hot: set[ast.AST],
    todo: list[Func],
    every: bool = False,
) -> None:
    """Add every node of ``body`` to ``hot`` and the same-file functions it calls to ``todo``
    (not those called once or every N steps: ``if step % 100 == 0: log(...)``)."""
    for stmt in body:
        for inner in descendants(stmt):
            hot.add(inner)
            if isinstance(inner, ast.Call) and (every or not rarely_runs(ctx, inner)):
                todo.extend(_callees(ctx, inner))


def _is_hot(ctx: FileContext, loop: ast.For | ast.AsyncFor | ast.While, steps: _Steps) -> bool:
    if isinstance(loop, ast.For | ast.AsyncFor) and iterates_loader(ctx, loop.iter):
        return True
    body = _own_body(loop)
    return any(_is_step(ctx, node) for node in body) or any(
        _calls_a_step(ctx, node, steps) for node in body
    )


def _loops_over_batches(ctx: FileContext, node: ast.AST) -> bool:
    """A loop that makes steps itself (``for x, y in loader``, a loop calling backward) or a
    comprehension over a loader; not ``for p in model.parameters()`` or ``(b.to(d) for b in
    batch)`` inside a step."""
    if isinstance(node, _COMPREHENSIONS):
        return any(iterates_loader(ctx, g.iter) for g in node.generators)
    if isinstance(node, ast.For | ast.AsyncFor) and iterates_loader(ctx, node.iter):
        return True
    return isinstance(node, _LOOPS) and any(_is_step(ctx, n) for n in _own_body(node))


def iterates_loader(ctx: FileContext, iterable: ast.expr) -> bool:
    """``loader``, ``enumerate(loader)``, ``tqdm(self.train_loader)``, ``dm.train_dataloader()``:
    batches."""
    wrapped = loader_of(iterable)
    iterable = wrapped.args[0] if wrapped is not None else iterable
    if _named(iterable).endswith("loader"):
        return True
    if isinstance(iterable, ast.Call):  # a data module's `train_dataloader()`
        func = iterable.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if called.lower().endswith("loader"):
            return True
    if not ctx.mentions_loaders:
        return False  # nothing here makes a loader for inference to find
    info = ctx.info(iterable)
    return info is not None and info.kind == K.LOADER


def _calls_a_step(ctx: FileContext, node: ast.AST, steps: _Steps, depth: int = 2) -> bool:
    """A call of a same-file function that makes one training step (``self._update(batch)``
    whose body calls ``loss.backward()`` outside any loop of its own): the loop calling it is
    the training loop. A function that loops over batches itself (``train_epoch``) has its own
    hot loop, and the loop calling it runs once per epoch. Plain functions and ``self``
    methods are followed, and ``trainer.optimize_parameters(it)`` when one method of the
    file's classes is what it calls."""
    if depth == 0 or not isinstance(node, ast.Call):
        return False
    callee = ctx.own_callee(node)
    func = node.func
    if callee is None and isinstance(func, ast.Attribute) and not is_self_attr(func):
        # the one plain class of the file (a trainer, not a layer) with that method, found by
        # name alone as own_callee finds functions: no inference of the receiver
        methods = ctx.plain_methods.get(func.attr, [])
        if len(methods) != 1:
            return False
        if ctx.enclosing(node, *_COMPREHENSIONS) is not None:
            return False  # ``[trainer.step(b) for b in loader]`` is a batch loop of its own
        callee = methods[0]
    if callee is None or rarely_runs(ctx, node):
        return False
    if (callee, depth) not in steps:
        steps[callee, depth] = _makes_a_step(ctx, callee, steps, depth)
    return steps[callee, depth]


def _makes_a_step(ctx: FileContext, callee: Func, steps: _Steps, depth: int) -> bool:
    body = _own_body(callee)
    if any(_loops_over_batches(ctx, n) for n in body):
        return False
    # a training step: an evaluation that calls the model once is not one (it runs per epoch)
    return any(_updates(ctx, n) or _calls_a_step(ctx, n, steps, depth - 1) for n in body)


def _updates(ctx: FileContext, node: ast.AST) -> bool:
    """``loss.backward()`` or ``optimizer.step()``: not a bare model call."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("backward", "step")
        and _is_step(ctx, node)
    )


def _named(node: ast.expr) -> str:
    """The name a loader or model is held under: ``loader``, ``self.train_loader``."""
    if isinstance(node, ast.Name):
        return node.id.lower()
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.attr.lower() if node.value.id == "self" else ""
    return ""


def _own_body(loop: ast.AST) -> list[ast.AST]:
    """Nodes of a loop body, not entering nested loops or definitions."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = list(getattr(loop, "body", []))
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, (*_LOOPS, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack.extend(children(node))
    return out


def _is_step(ctx: FileContext, node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute):
        if func.attr == "backward":
            return True
        if func.attr == "step":
            owner = ctx.info(func.value)
            if owner is not None and owner.kind in (K.OPTIMIZER, K.SCALER):
                return True
            return "optim" in ctx.text(func.value).lower()
    return looks_like_model_call(ctx, node)


def looks_like_model_call(ctx: FileContext, node: ast.Call) -> bool:
    """``model(x)``: a call of a module, or of a value held under a model's name."""
    func = node.func
    if ctx.qualname(func) is not None:
        return False  # a library function or class (torch.cat, nn.Linear): never a model
    if isinstance(func, ast.Name) and func.id not in ctx.bound_names:
        return False  # a builtin or a function: never a model held in a variable
    if is_self_attr(func):  # what the class assigns to it: no need of the caller's scope
        cls = ctx.class_of(ctx.function_of(node) or ctx.tree)
        callee = ctx.self_attr(cls, func.attr) if cls is not None else None  # type: ignore[attr-defined]
    else:
        callee = ctx.info(func)
    if callee is None:
        name = _named(func)
        return name in K.MODEL_NAMES or name.endswith("model")
    return callee.kind == K.MODULE


def _callees(ctx: FileContext, call: ast.Call) -> list[Func]:
    func = call.func
    own = ctx.own_callee(call)
    if own is not None:
        return [own]
    owner = ctx.function_of(call)
    cls = ctx.class_of(owner) if owner is not None else None
    if is_self_attr(func):
        # a submodule (``self.attend(q, k, v)``): its class's forward
        callee = ctx.self_attr(cls, func.attr) if cls is not None else None  # type: ignore[attr-defined]
    elif isinstance(func, ast.Name) and func.id not in ctx.bound_names:
        return []
    else:
        callee = ctx.info(func)
    if callee is not None and callee.kind == K.MODULE and callee.cls in ctx.module_classes:
        return _forwards(ctx, [callee.cls])
    if isinstance(func, ast.Name) and callee is None and cls is not None:
        return _forwards(ctx, _layers_iterated(ctx, func, cls))
    if isinstance(func, ast.Attribute) and callee is None:
        return _object_methods(ctx, func)
    return []


def _forwards(ctx: FileContext, classes: list[str]) -> list[Func]:
    found = (ctx.method(ctx.classes[c], "forward") for c in classes if c in ctx.module_classes)
    return [f for f in found if f is not None]


def _layers_iterated(ctx: FileContext, func: ast.Name, cls: ast.ClassDef) -> list[str]:
    """``for block in self.blocks: x = block(x)``: the same-file module classes built into
    ``self.blocks`` (an ``nn.ModuleList([Block(...) for ...])``)."""
    loop = next(
        (
            up
            for up in ctx.ancestors(func)
            if isinstance(up, ast.For)
            and isinstance(up.target, ast.Name)
            and up.target.id == func.id
        ),
        None,
    )
    if loop is None or not is_self_attr(loop.iter):
        return []
    assert isinstance(loop.iter, ast.Attribute)
    attr = loop.iter.attr
    built: list[str] = []
    for stmt in ast.walk(cls):  # its methods: where the layers are built
        if isinstance(stmt, ast.Assign) and any(is_self_attr(t, attr) for t in stmt.targets):
            built += [
                n.func.id
                for n in ast.walk(stmt.value)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            ]
    return built


def _object_methods(ctx: FileContext, func: ast.Attribute) -> list[Func]:
    """``meter.update(...)``, ``cb.on_step_end(...)``, ``model.task.compute_loss(...)``: the
    method of that name of the file's classes (not datasets, whose methods torch calls) when
    the receiver is made from one of them, or is unknown and only one class defines the name
    (a module's own methods count: the program calls them itself)."""
    if func.attr.startswith("__"):
        return []
    classes = [cls for name, cls in ctx.classes.items() if name not in ctx.dataset_classes]
    receiver = ctx.info(func.value)
    if receiver is not None and receiver.kind in (K.TENSOR, K.NDARRAY):
        return []  # ``F.mse_loss(...).mean(1)``: a tensor's method, not a meter's ``mean``
    made = receiver.cls if receiver is not None else _constructed(ctx, func.value)
    if made is not None:
        classes = [cls for cls in classes if cls.name == made]
    found = [m for m in (ctx.method(cls, func.attr) for cls in classes) if m is not None]
    if made is None and len(found) > 1:
        # a base class's empty hook and its overrides (``Callback.on_batch_end: pass``), or
        # callbacks by convention (``for cb in self.callbacks: cb.on_batch_end(...)``)
        found = [m for m in found if not _empty(m)]
        return found if func.attr.startswith("on_") or len(found) == 1 else []
    return found


def _empty(func: Func) -> bool:
    """A body of ``pass``, ``...``, a docstring or ``raise NotImplementedError``."""
    return all(
        isinstance(stmt, ast.Pass | ast.Raise)
        or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))
        for stmt in func.body
    )


def _constructed(ctx: FileContext, receiver: ast.expr) -> str | None:
    """The same-file class ``receiver`` was last made from in its function (``top5 =
    TopKAccuracy(k=5)``), when that is all there is to go by."""
    if not isinstance(receiver, ast.Name):
        return None
    made = None
    for node in walk_local(ctx.function_of(receiver) or ctx.tree):
        if (
            isinstance(node, ast.Assign)
            and node.lineno < receiver.lineno
            and any(isinstance(t, ast.Name) and t.id == receiver.id for t in node.targets)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id in ctx.classes
        ):
            made = node.value.func.id
    return made


def forward_nodes(ctx: FileContext) -> dict[ast.AST, str]:
    """Nodes of each module class's ``forward`` and the same-class helpers it calls.

    Maps node -> the qualified method name (``Net.forward``) it belongs to.
    """
    out: dict[ast.AST, str] = {}
    for name in ctx.module_classes:
        cls = ctx.classes[name]
        forward = ctx.method(cls, "forward")
        todo = [forward] if forward is not None else []
        seen: set[Func] = set()
        while todo:
            func = todo.pop()
            if func in seen:
                continue
            seen.add(func)
            # the body only: default values are evaluated once, when the class is defined
            for node in (n for stmt in func.body for n in (stmt, *walk_local(stmt))):
                out.setdefault(node, f"{name}.{func.name}")
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "self"
                ):
                    helper = ctx.method(cls, node.func.attr)
                    if helper is not None:
                        todo.append(helper)
    return out


_SCOPES = (
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ClassDef,
)


def rarely_runs(a: FileContext, node: ast.AST) -> bool:
    """Whether ``node`` is guarded, inside its loop, by a test that holds once or every N steps."""
    child = node
    for up in a.ancestors(node):
        if isinstance(up, _SCOPES):
            return False
        if isinstance(up, ast.If | ast.IfExp) and _in_body(up, child) and _sparse(a, up.test):
            return True
        child = up
    return False


def _in_body(branch: ast.If | ast.IfExp, child: ast.AST) -> bool:
    if isinstance(branch, ast.IfExp):
        return child is branch.body
    return child in branch.body


def _sparse(a: FileContext, test: ast.expr) -> bool:
    """``i % n == 0``, ``not i % n``, ``i == 0``, ``i == len(x) - 1`` (and conjunctions)."""
    if isinstance(test, ast.BoolOp):
        parts = [_sparse(a, v) for v in test.values]
        return any(parts) if isinstance(test.op, ast.And) else all(parts)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _has_modulo(test.operand)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    if not isinstance(test.ops[0], ast.Eq):
        return False
    sides = (test.left, test.comparators[0])
    if any(is_tensor(a, s) for s in sides):
        return False  # a value read from the device decides: that is a sync, not a schedule
    if any(_has_modulo(s) for s in sides):
        return True
    return any(_counter_target(s) for s in sides)


def _has_modulo(node: ast.AST) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in descendants(node))


def _counter_target(node: ast.expr) -> bool:
    """An int literal or arithmetic such as ``len(loader) - 1``: a step that comes once."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub)


def is_tensor(a: FileContext, node: ast.expr) -> bool:
    """Whether ``node`` is inferred to hold a tensor."""
    info = a.info(node)
    return info is not None and info.kind == K.TENSOR
