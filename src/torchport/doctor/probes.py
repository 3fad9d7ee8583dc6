"""Run the environment probe in a subprocess with a timeout, and read back what it found.

A hung driver can block ``import torch`` or CUDA initialisation forever, so the probe never runs
in the doctor's own process. The probe streams one JSON line per stage; on a timeout or a crash
the doctor keeps every stage that finished and records which one did not.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

DEFAULT_TIMEOUT_S = 60.0
_KILL_GRACE_S = 5.0
_STDERR_TAIL = 2000


# Run with -c, not -m: -m would put the working directory first on sys.path, and the probe's
# own imports would run the user's files there (a local torch/, json.py, ...). -c puts "" there,
# which goes before anything else is imported; -P would do it too, but only from Python 3.11.
# torchport's own folder goes last, for a torchport that is on no other entry.
_BOOTSTRAP = """\
import sys
if sys.path[:1] == [""]:
    del sys.path[0]
sys.path.append(sys.argv[1])
from torchport.doctor._probe import main
sys.exit(main(sys.argv[2:]))
"""
_TORCHPORT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def probe_command(smoke: bool) -> list[str]:
    """The command that runs the probe with the same interpreter as the doctor."""
    command = [sys.executable, "-c", _BOOTSTRAP, _TORCHPORT_ROOT]
    return [*command, "--smoke"] if smoke else command


def parse_output(stdout: str) -> tuple[dict[str, Any], str | None]:
    """The stages the probe reported, and the stage it started last but did not finish."""
    probe: dict[str, Any] = {}
    started: str | None = None
    for line in stdout.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a library printed to stdout; the probe's own lines are JSON objects
        if not isinstance(record, dict):
            continue
        for key, value in record.items():
            if key == "_started":
                started = value.get("stage") if isinstance(value, dict) else None
            else:
                probe[key] = value
    unfinished = started if started is not None and started not in probe else None
    return probe, unfinished


def _kill(proc: subprocess.Popen[str]) -> None:
    # The probe may have children (nvidia-smi) holding the pipes; end the whole group.
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except OSError:
        pass


def _communicate(proc: subprocess.Popen[str], timeout: float) -> tuple[str, str, bool]:
    """stdout, stderr and whether the timeout struck (the process is then killed)."""
    try:
        out, err = proc.communicate(timeout=timeout)
        return out, err, False
    except subprocess.TimeoutExpired:
        _kill(proc)
    try:
        out, err = proc.communicate(timeout=_KILL_GRACE_S)
    except subprocess.TimeoutExpired as exc:
        # A process stuck inside the kernel driver may not even die; keep what it wrote.
        out, err = _decode(exc.stdout), _decode(exc.stderr)
    return out, err, True


def _decode(data: bytes | str | None) -> str:
    if isinstance(data, bytes):
        return data.decode("utf-8", errors="replace")
    return data or ""


def collect(
    timeout: float = DEFAULT_TIMEOUT_S,
    smoke: bool = True,
    command: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Probe the environment; the result always has a ``probe`` entry saying how it went."""
    argv = list(command) if command is not None else probe_command(smoke)
    try:
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            start_new_session=os.name == "posix",
        )
    except OSError as exc:
        return {"probe": {"status": "failed", "error": str(exc), "timeout_s": timeout}}
    out, err, timed_out = _communicate(proc, timeout)
    probe, unfinished = parse_output(out)
    status = "ok"
    if timed_out:
        status = "timeout"
    elif proc.returncode != 0 or unfinished is not None:
        status = "crashed"
    probe["probe"] = {
        "status": status,
        "timeout_s": timeout,
        "unfinished_stage": unfinished,
        "returncode": proc.returncode,
        "stderr_tail": err[-_STDERR_TAIL:] if status != "ok" else "",
    }
    return probe
