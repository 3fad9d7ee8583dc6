"""Errors torchport reports to the user as one line on stderr, with exit code 2.

TorchportError          base: a message for the user, never a traceback
├── UsageError          bad command-line arguments or input paths
├── ConfigError         an invalid [tool.torchport] section (names file and key)
└── ProbeError          an environment probe could not run
"""

from __future__ import annotations

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
