"""`torchport port` on the command line: diff by default, atomic --write, bad input refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchport.cli import main
from torchport.port import PortOptions
from torchport.port.files import port_paths, write

SCRIPT = """\
import torch
import torch.nn as nn

model = nn.Linear(3, 1)  # the model
x = torch.randn(4, 3)
print(model(x).sum().item())
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return path


def test_diff_is_the_default_and_writes_nothing(
    script: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["port", str(script)]) == 0
    out = capsys.readouterr().out
    assert f"--- a/{str(script).lstrip('/')}" in out
    assert "+model = nn.Linear(3, 1).to(device)  # the model" in out
    assert script.read_text() == SCRIPT


def test_write_applies_the_port_once(script: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["port", "--write", str(script)]) == 0
    ported = script.read_text()
    assert "x = torch.randn(4, 3).to(device)" in ported
    assert "wrote 1 file(s)" in capsys.readouterr().err
    assert main(["port", "--write", str(script)]) == 0
    assert script.read_text() == ported
    assert "wrote 0 file(s)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"def broken(:\n", "syntax error"),
        (b"x = '\xff'\n", "not UTF-8"),
    ],
)
def test_bad_input_is_skipped_with_one_line_and_the_rest_is_ported(
    tmp_path: Path, script: Path, content: bytes, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.py"
    bad.write_bytes(content)
    assert main(["port", "--write", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    [line] = [line for line in out.splitlines() if "TP100" in line]
    assert message in line and f"{bad} was not ported" in line
    assert bad.read_bytes() == content
    assert "x = torch.randn(4, 3).to(device)" in script.read_text()


def test_missing_path_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["port", str(tmp_path / "nope.py")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_unported_code_is_listed_and_sets_exit_code_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "legacy.py"
    path.write_text("import torch\nx = torch.FloatTensor(2)\n")
    assert main(["port", str(path)]) == 1
    assert f"{path}:2:5: TP199 warning undecidable-device-placement" in capsys.readouterr().out


def test_json_output_carries_the_diff_and_the_notes(
    script: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["port", "--output-format", "json", str(script)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["command"] == "port"
    assert "+x = torch.randn(4, 3).to(device)" in report["facts"]["diff"]
    assert report["facts"]["files changed"] == 1


def test_distributed_prints_how_to_launch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n\ndef main():\n    model = nn.Linear(2, 2)\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n\n\n"
        'if __name__ == "__main__":\n    main()\n'
    )
    assert main(["port", "--distributed", "--write", str(path)]) == 0
    assert f"launch with: torchrun --nproc-per-node=NUM_GPUS {path}" in capsys.readouterr().err
    ported = path.read_text()
    assert 'dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")' in ported
    assert "model = DDP(model, device_ids=[LOCAL_RANK] if device.type" in ported
    assert ported.rstrip().endswith("dist.barrier()\n    dist.destroy_process_group()")


def test_a_file_changed_on_disk_after_porting_is_left_alone(script: Path) -> None:
    results = port_paths([str(script)], PortOptions())
    script.write_text(SCRIPT + "# edited meanwhile\n")
    written, problems = write(results)
    assert written == [] and problems == [
        f"{script}: changed on disk while being ported; left alone"
    ]
    assert script.read_text().endswith("# edited meanwhile\n")
