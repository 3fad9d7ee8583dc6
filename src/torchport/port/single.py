"""The single-device rewrite: one device, models and batches moved, tensors made where they belong.

One libcst transformer walks the file once. Expression-level rewrites (a call gains
``device=x.device``, ``.numpy()`` gains ``.detach().cpu()``) live in :mod:`torchport.port.calls`;
statement-level ones (moves after construction, batch moves at the top of a loop, buffers) here.
What cannot be rewritten safely is left as it is and reported as a note.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider, QualifiedNameProvider

from torchport.findings import Severity
from torchport.port import amp, snippets
from torchport.port.calls import CallRewrites, is_accelerator_literal
from torchport.port.facts import Facts, is_module_ctor, qualified, target_key
from torchport.port.options import PortOptions
from torchport.port.scopes import function_scope, mentions_move, module_scope
from torchport.port.snippets import Statement

ITER_WRAPPERS = frozenset({"enumerate", "tqdm", "iter"})
NOT_TENSOR_MAKERS = ("torch.nn.", "torch.device", "torch.cuda.", "torch.utils.", "torch.Generator")


class SinglePort(CallRewrites):
    """Rewrites one file for one device; see the module docstring."""

    METADATA_DEPENDENCIES = (QualifiedNameProvider, PositionProvider)

    def __init__(self, facts: Facts, options: PortOptions, path: str) -> None:
        super().__init__(facts, options, path)
        self.needs_helper = False
        self._classes: list[bool] = []
        self._if_depth = 0  # a CPU fallback inside an ``if`` is a choice, not a hard-coding
        self.device_loaders: set[str] = set(facts.device_loader_names)

    # -- bookkeeping -------------------------------------------------------------------------

    def visit_Module(self, node: cst.Module) -> None:
        self.scopes.append(module_scope(node, self.facts))

    def visit_If(self, node: cst.If) -> None:
        self._if_depth += 1

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.If:
        self._if_depth -= 1
        return updated_node

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(node.name.value in self.facts.module_classes)

    def leave_ClassDef(
        self, original_node: cst.ClassDef, updated_node: cst.ClassDef
    ) -> cst.ClassDef:
        self._classes.pop()
        return updated_node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        in_module_class = bool(self._classes) and self._classes[-1]
        self.scopes.append(function_scope(node, self.facts, in_module_class))

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        scope = self.scopes.pop()
        if not scope.move_before or not isinstance(updated_node.body, cst.IndentedBlock):
            return updated_node
        body = self._insert_moves(snippets.block(updated_node.body), scope.move_before)
        return updated_node.with_changes(body=updated_node.body.with_changes(body=body))

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        scope = self.scopes.pop()
        if not scope.move_before:
            return updated_node
        return updated_node.with_changes(
            body=self._insert_moves(list(updated_node.body), scope.move_before)
        )

    def _insert_moves(self, body: list[Statement], moves: dict[int, list[str]]) -> list[Statement]:
        """Data that reaches the model moves once, just before the statement that first uses it."""
        self.uses_device = True
        out: list[Statement] = []
        for i, statement in enumerate(body):
            names = moves.get(i, [])
            added = [
                snippets.assign(n, snippets.to_device(cst.Name(n), self.device)) for n in names
            ]
            if added:
                # The statement's comments and blank lines now lead the moves that precede it.
                added[0] = added[0].with_changes(leading_lines=statement.leading_lines)
                out.extend([*added, statement.with_changes(leading_lines=())])
            else:
                out.append(statement)
        return out

    # -- assignments ---------------------------------------------------------------------------

    def visit_Assign(self, node: cst.Assign) -> None:
        """With the runtime dependency, a named DataLoader is wrapped in DeviceLoader."""
        value = node.value
        if (
            self.options.runtime_dependency
            and not self.options.distributed  # the DDP rewrite needs the DataLoader itself
            and len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
            and isinstance(value, cst.Call)
            and (qualified(self, value.func) or "").endswith("utils.data.DataLoader")
        ):
            self._device_loaded.add(id(value))

    def leave_Assign(
        self, original_node: cst.Assign, updated_node: cst.Assign
    ) -> cst.BaseSmallStatement:
        scope = self.scope
        if id(original_node.value) in self._device_loaded:
            return self._wrap_loader(updated_node)
        if len(updated_node.targets) != 1:
            return updated_node
        target = updated_node.targets[0].target
        if scope.is_module_init:
            return self._module_attribute(original_node, updated_node, target)
        value = self._device_literal_value(original_node.value)
        if value is not None:
            return updated_node.with_changes(value=value)
        key = target_key(target)
        if key is None or (self._classes and self._classes[-1]):
            return updated_node
        if self._needs_move(original_node.value, key):
            self.uses_device = True
            moved = snippets.to_device(updated_node.value, self.device)
            return updated_node.with_changes(value=moved)
        return updated_node

    def _wrap_loader(self, assign: cst.Assign) -> cst.Assign:
        self.uses_device = True
        name = assign.targets[0].target
        assert isinstance(name, cst.Name)
        self.device_loaders.add(name.value)
        wrapped = cst.Call(
            func=cst.parse_expression("torchport.DeviceLoader"),
            args=[cst.Arg(assign.value, comma=snippets.comma()), cst.Arg(cst.Name(self.device))],
        )
        return assign.with_changes(value=wrapped)

    def _device_literal_value(self, value: cst.BaseExpression) -> cst.BaseExpression | None:
        """A hard-coded device (``torch.device("cuda:0")``) assigned to a name: select instead."""
        if not (isinstance(value, cst.Call) and qualified(self, value.func) == "torch.device"):
            return None
        if len(value.args) != 1 or not isinstance(value.args[0].value, cst.SimpleString):
            return None
        if not is_accelerator_literal(value.args[0].value) and self._if_depth:
            return None
        return snippets.selection_expression(self.options.runtime_dependency)

    def _needs_move(self, value: cst.BaseExpression, key: str) -> bool:
        if snippets.final_method(value) in ("to", "cuda") or not isinstance(value, cst.Call):
            return False
        qname = qualified(self, value.func)
        if key in self.facts.model_names and key not in self.facts.moved_names:
            return is_module_ctor(qname, self.facts.module_classes)
        return False

    def _module_attribute(
        self, original: cst.Assign, updated: cst.Assign, target: cst.BaseAssignTargetExpression
    ) -> cst.BaseSmallStatement:
        """In ``__init__`` of a module: tensors become buffers, lists of modules ModuleLists."""
        scope = self.scope
        if isinstance(target, cst.Name):
            if self._is_tensor(original.value):
                scope.tensor_locals.add(target.value)
            return updated
        key = target_key(target)
        if key is None or not key.startswith("self."):
            return updated
        attr = key.split(".", 1)[1]
        if self._is_tensor(original.value):
            if not scope.super_init_seen:
                self.note(original, f"`self.{attr}` is set before `super().__init__()`; "
                          "move it after to let the port register it as a buffer")  # fmt: skip
                return updated
            return cst.Expr(self._register_buffer(attr, updated.value))
        container = self._module_container(original.value)
        if container is not None:
            self.note(
                original,
                f"`self.{attr}` now registers its modules with {container}: their parameters "
                "are moved with the model and trained by its optimizer, which they were not",
                Severity.INFO,
            )
            wrapped = cst.Call(func=self._nn(container), args=[cst.Arg(updated.value)])
            return updated.with_changes(value=wrapped)
        return updated

    def _register_buffer(self, attr: str, value: cst.BaseExpression) -> cst.Call:
        # persistent=False keeps state_dict() and existing checkpoints exactly as they were.
        args = [
            cst.Arg(cst.SimpleString(f'"{attr}"'), comma=snippets.comma()),
            cst.Arg(value, comma=snippets.comma()),
            snippets.keyword("persistent", "False"),
        ]
        return snippets.method(cst.Name("self"), "register_buffer", *args)

    def _module_container(self, value: cst.BaseExpression) -> str | None:
        classes = self.facts.module_classes

        def is_module(expr: cst.BaseExpression) -> bool:
            return isinstance(expr, cst.Call) and is_module_ctor(
                qualified(self, expr.func), classes
            )

        if isinstance(value, cst.List) and value.elements:
            if all(is_module(e.value) for e in value.elements):
                return "ModuleList"
        elif isinstance(value, cst.ListComp) and is_module(value.elt):
            return "ModuleList"
        elif isinstance(value, cst.Dict) and value.elements:
            values = [e.value if isinstance(e, cst.DictElement) else None for e in value.elements]
            return "ModuleDict" if all(v is not None and is_module(v) for v in values) else None
        return None

    def _nn(self, name: str) -> cst.BaseExpression:
        alias = "nn" if self.facts.nn_alias == "nn" else "torch.nn"
        return cst.parse_expression(f"{alias}.{name}")

    def _is_tensor(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Name):
            return value.value in self.scope.tensor_locals
        if isinstance(value, cst.BinaryOperation):
            return self._is_tensor(value.left) or self._is_tensor(value.right)
        if not isinstance(value, cst.Call):
            return False
        root = snippets.chain_root(value)
        func = value.func
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value in self.scope.tensor_locals
        ):
            return func.attr.value not in ("item", "tolist", "size", "dim", "numel")
        qname = (qualified(self, root.func) if isinstance(root, cst.Call) else None) or ""
        return qname.startswith("torch.") and not qname.startswith(NOT_TENSOR_MAKERS)

    def visit_Call(self, node: cst.Call) -> None:
        super().visit_Call(node)
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "__init__"
            and isinstance(func.value, cst.Call)
            and isinstance(func.value.func, cst.Name)
            and func.value.func.value == "super"
        ):
            self.scope.super_init_seen = True

    # -- statements ----------------------------------------------------------------------------

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        if updated_node is original_node:
            return updated_node
        return snippets.exploded(updated_node)

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.For:
        if not isinstance(updated_node.body, cst.IndentedBlock):
            return updated_node
        body = snippets.block(updated_node.body)
        moves = self._batch_moves(original_node, body)
        if self.options.amp == "bf16":
            body = amp.wrap_autocast(body, self.scope.callables, self.device)
            self.uses_device = True
        return updated_node.with_changes(body=updated_node.body.with_changes(body=[*moves, *body]))

    def _batch_moves(self, original: cst.For, body: list[Statement]) -> list[Statement]:
        loader_iter, target = self._loader_target(original)
        if target_key(_iterated(original.iter)) in self.device_loaders:
            return []  # DeviceLoader yields batches already on the device
        if loader_iter:
            if isinstance(target, cst.Name) and target.value != "_":
                if _moved_in(body, target.value):
                    return []
                self.uses_device = True
                return [self._nested_move(target.value)]
            names = _tuple_names(target)
            if names is None:
                self.note(original, "cannot name the batch of this loop: move it to the device "
                          "where it enters the step")  # fmt: skip
                return []
        else:
            names = [n for n in _tuple_names(original.target) or [] if n in self.scope.bound]
        names = [n for n in names if n != "_" and not _moved_in(body, n)]
        if names:
            self.uses_device = True
        return [
            snippets.assign(n, snippets.to_device(cst.Name(n), self.device, non_blocking=True))
            for n in names
        ]

    def _nested_move(self, name: str) -> cst.SimpleStatementLine:
        if self.options.runtime_dependency:
            mover: cst.BaseExpression = cst.parse_expression("torchport.to_device")
        else:
            self.needs_helper = True
            mover = cst.Name("to_device")
        call = cst.Call(
            func=mover,
            args=[cst.Arg(cst.Name(name), comma=snippets.comma()), cst.Arg(cst.Name(self.device))],
        )
        return snippets.assign(name, call)

    def _loader_target(self, node: cst.For) -> tuple[bool, cst.BaseAssignTargetExpression]:
        """Whether the loop iterates a loader, and the part of its target that is the batch."""
        target = node.target
        counted = isinstance(node.iter, cst.Call) and _code(node.iter.func) == "enumerate"
        if counted and isinstance(target, cst.Tuple) and len(target.elements) == 2:
            target = target.elements[1].value  # type: ignore[assignment]
        key = target_key(_iterated(node.iter)) or ""
        is_loader = key in self.facts.loader_names or "loader" in key.lower()
        return is_loader, target


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _iterated(iterable: cst.BaseExpression) -> cst.BaseExpression:
    """``loader`` for ``loader``, ``enumerate(loader)`` and ``tqdm(loader)``."""
    if (
        isinstance(iterable, cst.Call)
        and isinstance(iterable.func, cst.Name)
        and iterable.func.value in ITER_WRAPPERS
        and iterable.args
    ):
        return iterable.args[0].value
    return iterable


def _tuple_names(target: cst.BaseExpression) -> list[str] | None:
    """Names in a (nested) tuple/list target, or None when it holds anything else."""
    if isinstance(target, cst.Name):
        return [target.value]
    if not isinstance(target, (cst.Tuple, cst.List)):
        return None
    names: list[str] = []
    for element in target.elements:
        if isinstance(element, cst.StarredElement):
            return None
        inner = _tuple_names(element.value)
        if inner is None:
            return None
        names.extend(inner)
    return names


def _moved_in(body: list[Statement], name: str) -> bool:
    """Whether the loop body already reassigns ``name`` from a device move."""
    for statement in body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if not isinstance(small, cst.Assign):
                continue
            targets = [_tuple_names(t.target) or [] for t in small.targets]
            if any(name in t for t in targets) and mentions_move(small.value):
                return True
    return False
