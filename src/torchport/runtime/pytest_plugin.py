"""pytest plugin: ``pytest --torchport`` observes each test and reports its findings.

Registered through the ``pytest11`` entry point and off unless asked: ``--torchport`` reports
findings per test at the end of the run, ``--torchport-strict`` also fails a test that produced
an error-level finding, ``--torchport-simulate cuda`` runs each test on a simulated GPU.

pytest loads this module in every session of an environment where torchport is installed, so
it imports neither torch nor the observer until one of those options is given.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from torchport.errors import MissingTorchError, require_torch
from torchport.findings import Finding, Severity

_FINDINGS = pytest.StashKey[list[tuple[str, list[Finding]]]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("torchport", "torchport runtime checks")
    group.addoption("--torchport", action="store_true", help="observe each test with torchport")
    group.addoption(
        "--torchport-strict",
        action="store_true",
        help="observe each test and fail those with an error-level torchport finding",
    )
    group.addoption(
        "--torchport-simulate",
        metavar="DEVICE",
        default=None,
        help="observe each test on a simulated GPU: cuda, cuda:N or mps (implies --torchport)",
    )


def _enabled(config: pytest.Config) -> bool:
    options = ("torchport", "torchport_strict", "torchport_simulate")
    return any(config.getoption(option) for option in options)


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_FINDINGS] = []
    if _enabled(config):
        try:
            require_torch("pytest --torchport")
        except MissingTorchError as error:
            raise pytest.UsageError(str(error)) from None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    if not _enabled(item.config):
        return (yield)
    from torchport.runtime.watch import watch

    watcher = watch(item.config.getoption("torchport_simulate"))
    try:
        with watcher:
            result = yield
    finally:
        if watcher.findings:
            item.config.stash[_FINDINGS].append((item.nodeid, watcher.findings))
    errors = [f for f in watcher.findings if f.severity >= Severity.ERROR]
    if errors and item.config.getoption("torchport_strict"):
        lines = "\n".join(f"{f.location}: {f.code} {f.message}" for f in errors)
        pytest.fail(f"torchport found {len(errors)} error(s):\n{lines}", pytrace=False)
    return result


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    collected = config.stash.get(_FINDINGS, [])
    if not _enabled(config):
        return
    terminalreporter.section("torchport")
    if not collected:
        terminalreporter.write_line("No findings.")
        return
    for nodeid, findings in collected:
        terminalreporter.write_line(nodeid)
        for f in findings:
            where = f"{f.location}: " if f.location is not None else ""
            terminalreporter.write_line(
                f"  {where}{f.code} {f.severity.label} {f.name}: {f.message}"
            )
