"""Where things happen in the user's code: the first frame outside torch, torchport and Python.

Every runtime finding names the user's own line, never a frame of torch or torchport. Frames are
classified once per file name (a dict look-up afterwards), so a walk costs well under a
microsecond per frame.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import warnings
from dataclasses import dataclass
from types import FrameType
from typing import Any

import torch
from torch.utils.weak import WeakIdKeyDictionary

import torchport
from torchport.findings import Location


def _package_dir(module: Any) -> str:
    return os.path.dirname(os.path.abspath(str(module.__file__))) + os.sep


_TORCHPORT_DIR = _package_dir(torchport)
_SKIPPED_DIRS = tuple(
    {
        _package_dir(torch),
        _TORCHPORT_DIR,
        os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep,
    }
)
# The bundled examples are user code as far as findings go: they are what users run first.
_EXAMPLES_DIR = os.path.join(_TORCHPORT_DIR, "examples") + os.sep
# Installed libraries (torchvision, timm, pytest…) are not the user's code either: a finding
# names the user's line that called into them.
_INSTALLED = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
_IS_USER: dict[str, bool] = {}


def is_user_file(filename: str) -> bool:
    """Whether ``filename`` is the user's code (not torch, torchport, Python or a library)."""
    known = _IS_USER.get(filename)
    if known is None:
        absolute = os.path.abspath(filename)
        known = not filename.startswith("<") and (
            absolute.startswith(_EXAMPLES_DIR)
            or not (absolute.startswith(_SKIPPED_DIRS) or any(d in absolute for d in _INSTALLED))
        )
        _IS_USER[filename] = known
    return known


_IS_TORCHPORT: dict[str, bool] = {}


def is_torchport_file(filename: str) -> bool:
    """Whether ``filename`` is torchport's own code (its bundled examples are the user's)."""
    known = _IS_TORCHPORT.get(filename)
    if known is None:
        absolute = os.path.abspath(filename)
        known = absolute.startswith(_TORCHPORT_DIR) and not absolute.startswith(_EXAMPLES_DIR)
        _IS_TORCHPORT[filename] = known
    return known


def ignore_file(filename: str) -> None:
    """Never report ``filename`` as the user's (the ``torchport`` launcher script, say)."""
    _IS_USER[filename] = False


@dataclass(frozen=True, slots=True)
class Site:
    """One line of user code, and the call made there (``torch.randn``, ``.to``…)."""

    path: str
    line: int
    call: str = ""

    def location(self) -> Location:
        return Location(self.path, self.line)

    def short(self) -> str:
        return f"{os.path.basename(self.path)}:{self.line}"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


def user_frame(start: int = 2) -> FrameType | None:
    """The innermost frame of user code above the caller (``start`` frames up)."""
    try:
        frame: FrameType | None = sys._getframe(start)
    except ValueError:
        return None
    return user_frame_from(frame)


def user_frame_from(frame: FrameType | None) -> FrameType | None:
    """``frame`` or the first frame of user code above it."""
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def user_site(call: str = "", start: int = 2) -> Site | None:
    """The user's line that led to this call, labelled with ``call``."""
    frame = user_frame(start)
    if frame is None:
        return None
    return Site(frame.f_code.co_filename, frame.f_lineno, call)


def user_caller(start: int = 2) -> Site | None:
    """The user's line that called the function holding the user's line of this call (a
    training loop's ``self._clip()``), when the caller is user code too."""
    frame = user_frame(start)
    caller = frame.f_back if frame is not None else None
    if caller is None or not is_user_file(caller.f_code.co_filename):
        return None
    return Site(caller.f_code.co_filename, caller.f_lineno)


def call_name(func: Any) -> str:
    """``torch.randn``, ``Tensor.to``, ``torch.nn.functional.linear``: how users spell ``func``."""
    name = getattr(func, "__name__", None) or repr(func)
    qual = getattr(func, "__qualname__", name)
    if qual.startswith(("TensorBase.", "Tensor.", "_TensorBase.")):
        return "Tensor." + qual.split(".", 1)[1]
    module = getattr(func, "__module__", None) or "torch"
    if module.startswith("torch._C") or module == "torch._tensor":
        module = "torch"
    return f"{module}.{name}"


def tensor_leaves(value: Any, depth: int = 0) -> list[torch.Tensor]:
    """The tensors of a batch or a checkpoint: dicts, lists and tuples, a few levels deep."""
    if isinstance(value, torch.Tensor):
        return [value]
    if depth > _LEAF_DEPTH:
        return []
    if isinstance(value, dict):
        value = list(value.values())
    if not isinstance(value, (list, tuple)):
        return []
    return [t for item in value for t in tensor_leaves(item, depth + 1)]


_LEAF_DEPTH = 4


class Provenance:
    """Where each live tensor was created, keyed weakly by identity (tensors are unhashable)."""

    def __init__(self) -> None:
        self._sites: WeakIdKeyDictionary = WeakIdKeyDictionary()
        # host tensors copied to a device, and where: one that later meets the device itself
        # had its copy made and not kept (``x.to(device)`` whose result is discarded)
        self._copied: WeakIdKeyDictionary = WeakIdKeyDictionary()
        # host tensors a `.to(device)` left on the host, and where (see record_kept)
        self._kept: WeakIdKeyDictionary = WeakIdKeyDictionary()

    def record(self, tensor: torch.Tensor, site: Site) -> None:
        self._sites[tensor] = site

    def record_copy(self, source: torch.Tensor, site: Site) -> None:
        self._copied[source] = site

    def record_kept(self, tensor: torch.Tensor, site: Site) -> None:
        """``tensor.to(device)`` at ``site`` left it where it was, on the host: the device it
        was given was the host then (read from a module not yet moved)."""
        self._kept[tensor] = site

    def kept_at(self, tensor: torch.Tensor) -> Site | None:
        site = self._kept.get(tensor)  # type: ignore[no-untyped-call]
        return site if isinstance(site, Site) else None

    def copied_at(self, tensor: torch.Tensor) -> Site | None:
        site = self._copied.get(tensor)  # type: ignore[no-untyped-call]
        return site if isinstance(site, Site) else None

    def get(self, tensor: torch.Tensor) -> Site | None:
        site = self._sites.get(tensor)  # type: ignore[no-untyped-call]
        return site if isinstance(site, Site) else None

    def record_tree(self, value: Any, site: Site) -> None:
        """Record ``site`` for every tensor in a (nested) batch of tuples, lists and dicts."""
        if isinstance(value, torch.Tensor):
            self._sites[value] = site
        elif isinstance(value, (list, tuple)):
            for item in value:
                self.record_tree(item, site)
        elif isinstance(value, dict):
            for item in value.values():
                self.record_tree(item, site)


class _WarningsAtUserLine:
    """Shows a warning that an op raised at the user's line, not at torchport's handler.

    Python attributes a warning from C++ (or one with ``stacklevel``) to the innermost Python
    frame, which under observation is the observer calling the op. The hook puts it back at the
    user's line that made the call, with the filters and the once-per-line memory of that
    line's module, as if torchport were absent. It costs nothing until a warning is shown.
    """

    def __init__(self) -> None:
        self._saved: list[Any] = []

    def install(self) -> None:
        original = warnings.showwarning
        self._saved.append(original)

        def showwarning(  # noqa: PLR0917 - the signature of warnings.showwarning
            message: Warning | str, category: type[Warning], filename: str, lineno: int,
            file: Any = None, line: str | None = None,
        ) -> None:  # fmt: skip
            if is_torchport_file(filename) and _reissue(message, category, filename, lineno):
                return
            original(message, category, filename, lineno, file, line)

        warnings.showwarning = showwarning

    def remove(self) -> None:
        warnings.showwarning = self._saved.pop()


def _reissue(message: Warning | str, category: type[Warning], filename: str, lineno: int) -> bool:
    """Warn again at the user's line; False when there is none (the caller shows it as it is)."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and not (
        frame.f_code.co_filename == filename and frame.f_lineno == lineno
    ):
        frame = frame.f_back
    if frame is None:
        return False
    attributed = frame
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return False
    # torchport's own module remembered the warning as shown at its line; forget that, so the
    # same warning from another line of the user's is shown there too.
    registry = attributed.f_globals.get("__warningregistry__")
    if isinstance(registry, dict):
        text = str(message)
        for key in ((text, category, lineno), (text, category, 0)):
            registry.pop(key, None)
    user_globals = frame.f_globals
    warnings.warn_explicit(
        message,
        category,
        frame.f_code.co_filename,
        frame.f_lineno,
        module=user_globals.get("__name__"),
        registry=user_globals.setdefault("__warningregistry__", {}),
        module_globals=user_globals,
    )
    return True


warnings_at_user_line = _WarningsAtUserLine()
