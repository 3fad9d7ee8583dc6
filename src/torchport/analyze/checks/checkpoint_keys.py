"""Static detectors of checkpoint keys mangled on the way to or from a wrapped model: a
``str.strip`` that eats characters of a key (TP408), and a DataParallel/DDP wrapper's
``module.`` keys saved for the bare model (TP410)."""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Iterable, Iterator

from torchport.analyze.checks.base import Analysis, detector
from torchport.analyze.checks.values import assigned_value, imports_torch, is_parameter
from torchport.analyze.context import Func, walk_local
from torchport.analyze.infer import keyword
from torchport.findings import Edit, Finding, Fix, Safety
from torchport.rules import distributed as R

_DDP = "torch.nn.parallel.DistributedDataParallel"

# A dotted name ("module.", "_orig_mod.", ".pt", "model.encoder"): the text of a prefix or a
# suffix, unlike the character sets strip is meant for ("\r\n", "0123456789", " []").
_AFFIX = re.compile(r"\.?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\.?")
_RUNS = (string.ascii_lowercase, string.ascii_uppercase, string.hexdigits)
_AFFIX_METHODS = {"lstrip": "removeprefix", "rstrip": "removesuffix"}


@detector(R.StripRemovesCharacters)
def strip_removes_characters(a: Analysis) -> Iterator[Finding]:
    if "strip(" not in a.source or not imports_torch(a):
        return
    for call, func in a.method_calls("lstrip", "rstrip", "strip"):
        if len(call.args) != 1 or call.keywords:
            continue
        chars, literal = _string_value(a, call.args[0])
        if chars is None or not _looks_like_affix(chars):
            continue
        method = _AFFIX_METHODS.get(func.attr) or _strip_intent(chars)
        message = (
            f"`{a.name(call)}` strips any of the characters in {chars!r}, not that text"
            + _strip_example(func.attr, method, chars)
        )
        if method is None:
            yield R.StripRemovesCharacters.finding(
                message + "; use `removeprefix`/`removesuffix` or slicing",
                a.loc(call),
                Fix("use `removeprefix`/`removesuffix` or slicing"),
            )
            continue
        pandas = isinstance(func.value, ast.Attribute) and func.value.attr == "str"
        safe = literal and func.attr in _AFFIX_METHODS and not pandas
        line, end = a.end(func)
        rename = Edit(line, end - len(func.attr), line, end, method)
        yield R.StripRemovesCharacters.finding(
            message + f"; use `.{method}({a.text(call.args[0])})`",
            a.loc(call),
            Fix(f"use `.{method}()`", (rename,), Safety.SAFE if safe else Safety.UNSAFE),
        )


# names a state-dict key or a file name may go on with after a prefix, or start with before a
# suffix: one of them shows what strip takes away
_AFTER_PREFIX = ("embed.weight", "decoder.bias", "out.weight", "layer1.weight", "model.fc.bias")
_BEFORE_SUFFIX = ("checkpoint", "best_net", "weights", "output", "latest", "model")


def _strip_example(method: str, intent: str | None, chars: str) -> str:
    """``: "module.embed.weight" becomes "bed.weight"`` for the first name that shows it."""
    suffix = method == "rstrip" or (method == "strip" and intent == "removesuffix")
    if not (chars.startswith(".") if suffix else chars.endswith(".")):
        return ""  # "model" glued to a name reads as no key would
    for name in _BEFORE_SUFFIX if suffix else _AFTER_PREFIX:
        text = name + chars if suffix else chars + name
        stripped = getattr(text, method)(chars)
        if stripped != name:
            return f': "{text}" becomes "{stripped}"'
    return ""


def _string_value(a: Analysis, arg: ast.expr) -> tuple[str | None, bool]:
    """The text of a string literal (and True), or of the literal a name was last given."""
    literal = isinstance(arg, ast.Constant)
    if isinstance(arg, ast.Name):
        arg = assigned_value(a, arg, arg.lineno) or arg
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value, literal
    return None, literal


def _looks_like_affix(chars: str) -> bool:
    """A dotted name, or a lower-case word of four letters or more ("model": state-dict keys
    are lower-case), that is not a run of the alphabet or of digits ("abcdef", "0123456789"):
    those are character sets, as upper-case letters often are (units: "KMGT")."""
    if len(set(chars)) < 2 or not _AFFIX.fullmatch(chars):
        return False
    if any(chars in run for run in _RUNS):
        return False
    return "." in chars or (len(chars) >= 4 and chars.islower())


def _strip_intent(chars: str) -> str | None:
    """What ``strip(chars)`` was meant to remove: "module." is a prefix, ".pt" a suffix."""
    if chars.endswith(".") and not chars.startswith("."):
        return "removeprefix"
    if chars.startswith(".") and not chars.endswith("."):
        return "removesuffix"
    return None


_WRAPPERS = ("torch.nn.DataParallel", _DDP)


@detector(R.WrappedStateDictSaved)
def wrapped_state_dict_saved(a: Analysis) -> Iterator[Finding]:
    if "state_dict" not in a.source or _renames_keys(a):
        return
    wraps = _wraps(a)
    if not wraps:
        return
    for call in a.call_named("torch.save"):
        if not call.args:
            continue
        for model in _saved_state_dicts(a, call):
            wrap = _wrapped_at_save(a, model, call, wraps)
            if wrap is None or _reloaded_into_wrapper(a, model, wraps):
                continue
            yield R.WrappedStateDictSaved.finding(
                f"`{a.name(model)}` is wrapped in `{_wrapper_name(a, wrap)}` (line "
                f"{wrap.lineno}): the keys of its state dict start with `module.` and do not "
                f"load into the bare model; save `{a.name(model)}.module.state_dict()`",
                a.loc(model),
                Fix(f"save `{a.name(model)}.module.state_dict()`"),
                related=(a.loc(wrap),),
            )


def _renames_keys(a: Analysis) -> bool:
    """The file deals with the prefix itself (``k.replace("module.", "")``...): it saves
    wrapped state dicts on purpose."""
    return "module." in a.source and any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("module.")
        for n in a.of_type(ast.Constant)
    )


def _unmoved(value: ast.expr) -> ast.expr:
    """``DataParallel(m)`` for ``DataParallel(m).to(device)`` or ``.cuda()``."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in ("to", "cuda")
        and isinstance(value.func.value, ast.Call)
    ):
        value = value.func.value
    return value


def _wrapper_name(a: Analysis, wrap: ast.Assign) -> str:
    value = _unmoved(wrap.value)
    called = a.qualname(value.func) if isinstance(value, ast.Call) else None
    return (called or "DataParallel").rsplit(".", 1)[-1]


def _is_wrapper(a: Analysis, value: ast.expr) -> bool:
    value = _unmoved(value)
    return isinstance(value, ast.Call) and a.qualname(value.func) in _WRAPPERS


def _wraps(a: Analysis) -> dict[str, list[ast.Assign]]:
    """``model = DataParallel(model)``, ``self.net = DDP(...)``: by the name or ``self.attr``."""
    out: dict[str, list[ast.Assign]] = {}
    for call in a.call_named(*_WRAPPERS):
        stmt = a.parents.get(call)
        while isinstance(stmt, ast.Attribute | ast.Call):
            stmt = a.parents.get(stmt)  # through `.to(device)`
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            continue
        key = _model_key(stmt.targets[0])
        if key is not None and _is_wrapper(a, stmt.value):
            out.setdefault(key, []).append(stmt)
    # `model = DDP(model)` then `self.model = model` in the same function
    for stmt in a.of_type(ast.Assign):
        assert isinstance(stmt, ast.Assign)
        value, targets = stmt.value, stmt.targets
        if len(targets) != 1 or not isinstance(value, ast.Name) or value.id not in out:
            continue
        key = _model_key(targets[0])
        owner = a.function_of(stmt)
        held = [w for w in out[value.id] if a.function_of(w) is owner and w.lineno < stmt.lineno]
        if key is not None and key.startswith("self.") and held:
            out.setdefault(key, []).extend(held)
    return out


def _model_key(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"self.{node.attr}" if node.value.id == "self" else None
    return node.id if isinstance(node, ast.Name) else None


def _saved_state_dicts(a: Analysis, save: ast.Call) -> Iterable[ast.expr]:
    """``m`` for each ``m.state_dict()`` in what ``save`` writes (a dict of them included, or
    the name such a dict was assigned to above)."""
    saved = save.args[0]
    roots = [saved]
    if isinstance(saved, ast.Name):
        value = assigned_value(a, saved, save.lineno)
        roots += [value] if value is not None else []
    for root in roots:
        for node in ast.walk(root):
            if isinstance(node, ast.Call) and not node.args and not node.keywords:
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr == "state_dict":
                    yield func.value


def _wrapped_at_save(
    a: Analysis, model: ast.expr, save: ast.Call, wraps: dict[str, list[ast.Assign]]
) -> ast.Assign | None:
    """The wrapping that ``model`` holds where ``save`` runs: made above it in the same
    function, in a method of the same class (``self.net``), or, for a parameter, by the
    name that every caller in the file passes."""
    key = _model_key(model)
    found = wraps.get(key or "", [])
    owner = a.function_of(save)
    if key is None or (not found and not key.startswith("self.")):
        return None
    if key.startswith("self."):
        cls = a.class_of(owner) if owner is not None else None
        in_class = next(
            (
                w
                for w in found
                if cls is not None
                and a.class_of(a.function_of(w) or w) is cls
                and _wrapped_before_saving(a, a.function_of(w), owner)
            ),
            None,
        )
        if in_class is not None or cls is None:
            return in_class
        return _wrapped_when_constructed(a, cls, key.removeprefix("self."), wraps)
    assert isinstance(model, ast.Name)
    last = assigned_value(a, model, save.lineno)
    if last is not None:
        here = [w for w in found if w.value is last]
        return here[0] if here else _wrapped_by_helper(a, last, wraps)
    if owner is None or not _passed_wrapped(a, owner, key, wraps):
        return None
    return found[0]


def _wrapped_when_constructed(
    a: Analysis, cls: ast.ClassDef, attr: str, wraps: dict[str, list[ast.Assign]]
) -> ast.Assign | None:
    """``self.model = model`` in ``__init__``, and ``Checkpoint(dirname, model)`` where the
    caller wrapped ``model`` above: the wrapping the object holds (a checkpoint callback)."""
    init = a.method(cls, "__init__")
    if init is None:
        return None
    held = next(
        (
            value.id
            for stmt, value in a.attr_assignments(cls).get(attr, [])
            if a.function_of(stmt) is init and isinstance(value, ast.Name)
        ),
        None,
    )
    if held is None or not is_parameter(init, held):
        return None
    for call, given in a.given_by_call(init, held):
        if not isinstance(given, ast.Name):
            continue
        caller = a.function_of(call)
        wrapped = [
            w
            for w in wraps.get(given.id, [])
            if a.function_of(w) is caller and w.lineno < call.lineno
        ]
        if wrapped:
            return wrapped[-1]
    return None


def _wrapped_by_helper(
    a: Analysis, value: ast.expr, wraps: dict[str, list[ast.Assign]]
) -> ast.Assign | None:
    """``model = maybe_parallel(net)``: the wrapping a same-file helper makes (on some
    machines: ``if torch.cuda.device_count() > 1``) of the name it returns."""
    helper = a.own_callee(value) if isinstance(value, ast.Call) else None
    if helper is None:
        return None
    for ret in (n for n in walk_local(helper) if isinstance(n, ast.Return)):
        if isinstance(ret.value, ast.Name):
            inside = [w for w in wraps.get(ret.value.id, []) if a.function_of(w) is helper]
            if inside:
                return inside[0]
    return None


def _wrapped_before_saving(a: Analysis, wrapper: Func | None, saver: Func | None) -> bool:
    """Whether an attribute wrapped in method ``wrapper`` can be wrapped when method ``saver``
    saves it. Wrapped in ``__init__`` or in the saving method itself: always. Wrapped in a
    method of its own (``wrap_ddp()``): only if some call of ``saver`` in the file follows a
    call of ``wrapper`` on the same object in the same function, or the file never calls
    ``saver`` (then nothing says otherwise)."""
    if wrapper is None or saver is None or wrapper is saver or wrapper.name == "__init__":
        return True
    saves = list(a.method_calls(saver.name))
    if not saves:
        return True
    wraps = list(a.method_calls(wrapper.name))
    return any(
        a.function_of(w) is a.function_of(call)
        and w.lineno < call.lineno
        and a.text(wf.value) == a.text(func.value)
        for call, func in saves
        for w, wf in wraps
    )


def _passed_wrapped(
    a: Analysis, func: Func, param: str, wraps: dict[str, list[ast.Assign]]
) -> bool:
    """``param`` of ``func`` is never rebound there and every call of ``func`` in the file
    passes it a name that the file wraps (there is at least one call)."""
    names = [arg.arg for arg in func.args.args]
    if param not in names or a.functions.get(func.name) is not func:
        return False
    if any(
        isinstance(n, ast.Name) and n.id == param and isinstance(n.ctx, ast.Store)
        for n in walk_local(func)
    ):
        return False
    index = names.index(param)
    passed = []
    for call in a.calls:
        if isinstance(call.func, ast.Name) and call.func.id == func.name:
            arg = keyword(call, param) or (call.args[index] if index < len(call.args) else None)
            passed.append(arg)
    return bool(passed) and all(isinstance(p, ast.Name) and p.id in wraps for p in passed)


def _reloaded_into_wrapper(
    a: Analysis, model: ast.expr, wraps: dict[str, list[ast.Assign]]
) -> bool:
    """The file loads state dicts into the wrapper itself (a resume): wrapped keys are what
    it reads back."""
    key = _model_key(model)
    for call, func in a.method_calls("load_state_dict"):
        if _model_key(func.value) != key or key is None:
            continue
        owner = a.function_of(call)
        if any(a.function_of(w) is owner and w.lineno < call.lineno for w in wraps[key]):
            return True
    return False
