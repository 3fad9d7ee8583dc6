"""Errors torchport reports to the user as one line on stderr, with exit code 2.

TorchportError          base: a message for the user, never a traceback
├── UsageError          bad command-line arguments or input paths
├── ConfigError         an invalid [tool.torchport] section (names file and key)
├── ProbeError          an environment probe could not run
└── MissingTorchError   a command that needs PyTorch, where it is absent, broken or too old
"""

from __future__ import annotations

import re

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT


class TorchportError(Exception):
    """An error whose message is shown to the user as is."""

    exit_code = EXIT_ERROR


class UsageError(TorchportError):
    """The command line or an input path is wrong."""


class ConfigError(TorchportError):
    """The configuration is invalid."""

    def __init__(self, path: str, key: str | None, problem: str) -> None:
        where = f"{path}: [tool.torchport]"
        if key:
            where += f" {key}"
        super().__init__(f"{where}: {problem}")
        self.path, self.key, self.problem = path, key, problem


class ProbeError(TorchportError):
    """An environment probe failed in a way the doctor cannot diagnose."""


class MissingTorchError(TorchportError):
    """``run``, ``bench`` and ``pytest --torchport`` need PyTorch; ``check`` and ``port`` do not."""


MIN_TORCH = (2, 4)


def require_torch(command: str) -> None:
    """Import torch for ``command``, or fail with one line where it is absent, broken or old.

    torch is not a dependency of the package (``check`` and ``port`` never import it), so the
    commands that do need it say so themselves rather than failing with an ImportError.
    """
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - ImportError, or OSError for a missing CUDA library
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise MissingTorchError(
            f"{command} needs PyTorch, and `import torch` fails here ({reason}); "
            "`torchport doctor` says why, or install it: pip install torch"
        ) from None
    found = tuple(int(part) for part in re.findall(r"\d+", torch.__version__)[:2])
    if found < MIN_TORCH:
        raise MissingTorchError(
            f"{command} needs torch >= {'.'.join(map(str, MIN_TORCH))}; this environment has "
            f"torch {torch.__version__}"
        )
