"""pytest plugin: ``pytest --torchport`` observes each test and reports its findings.

Registered through the ``pytest11`` entry point and off unless asked: ``--torchport`` reports
findings per test at the end of the run, ``--torchport-strict`` also fails a test that produced
an error-level finding, ``--torchport-simulate cuda`` runs each test on a simulated GPU.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from torchport.findings import Finding, Severity
from torchport.runtime.watch import watch

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
        help="run each observed test on a simulated accelerator (cuda, cuda:N, mps)",
    )


def _enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("torchport") or config.getoption("torchport_strict"))


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_FINDINGS] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    if not _enabled(item.config):
        return (yield)
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
