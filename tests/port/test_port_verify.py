"""``port --verify``: the port is run, compared with the original, and repaired where the run
points at a tensor left on the CPU."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from torchport.cli import main
from torchport.port import PortOptions, port_sources
from torchport.port import verify as V

# A factory the static analysis cannot connect to the device: it is called through getattr
# with a computed name, so only a run shows that its tensor meets the model's.
HIDDEN = textwrap.dedent(
    """
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def bias(self):
            return torch.zeros(4)

        def forward(self, x):
            return self.fc(x) + getattr(self, "bi" + "as")()


    if __name__ == "__main__":
        net = Net()
        print(f"final loss {net(torch.ones(2, 4)).sum().item():.4f}")
    """
)


class FakeRuns:
    """Stands in for the two runs: the port fails until its ``torch.zeros`` is on the device."""

    def __init__(self) -> None:
        self.ported_runs = 0

    def __call__(
        self, label: str, command: list[str], cwd: Path, env: dict[str, str], timeout: float
    ) -> V.Run:
        if label == "original":
            assert env["CUDA_VISIBLE_DEVICES"] == ""  # the reference runs on the CPU
            return V.Run(label, 0, 0.1, "final loss 1.2500\n", "")
        self.ported_runs += 1
        assert "--simulate" in command  # no GPU in these tests
        script = cwd / "train.py"
        lines = script.read_text().splitlines()
        line = next(i for i, text in enumerate(lines, 1) if "torch.zeros(4" in text)
        if "device=" not in lines[line - 1]:
            error = (
                "RuntimeError: Expected all tensors to be on the same device\n"
                f"  - other: on cpu; created at {script}:{line} by torch.zeros\n"
            )
            return V.Run(label, 1, 0.1, "", error)
        return V.Run(label, 0, 0.1, "final loss 1.2500\n", "")


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(HIDDEN)
    return path


def test_a_creation_site_the_run_points_at_is_repaired_and_run_again(
    script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = FakeRuns()
    monkeypatch.setattr(V, "_execute", runs)
    monkeypatch.setattr(V, "_has_gpu", lambda: False)
    results = port_sources([(str(script), script.read_text())], PortOptions())
    assert "torch.zeros(4)\n" in results[0].after  # the analysis alone cannot see it
    repaired, verdict = V.verify([str(script)], results, PortOptions(), V.VerifySettings())
    assert runs.ported_runs == 2
    ported_line = results[0].after.splitlines().index("        return torch.zeros(4)") + 1
    assert verdict.ok and verdict.repaired == [f"{script}:{ported_line} (torch.zeros)"]
    assert "torch.zeros(4, device=next(self.parameters()).device)" in repaired[0].after
    assert repaired[0].before == HIDDEN  # the diff shown is from the user's original
    assert V.findings(verdict, str(script)) == []
    assert script.read_text() == HIDDEN  # nothing written without --write


def test_repairs_stop_at_the_limit_and_the_failure_is_a_finding(
    script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(V, "_execute", FakeRuns())
    monkeypatch.setattr(V, "_has_gpu", lambda: False)
    results = port_sources([(str(script), script.read_text())], PortOptions())
    _, verdict = V.verify([str(script)], results, PortOptions(), V.VerifySettings(repairs=0))
    assert not verdict.ok and verdict.repaired == []
    [finding] = V.findings(verdict, str(script))
    assert finding.code == "TP198"
    assert "did not run on a simulated CUDA device" in finding.message


@pytest.mark.parametrize(
    ("original", "ported", "agree"),
    [
        ("final loss 0.12345678", "final loss 0.12345678", True),
        ("final loss 0.12345678", "final loss 0.12345679", True),  # within 1e-6
        ("final loss 0.1234", "final loss 0.1240", False),
        ("epoch 3 acc 0.5", "epoch 3 acc 0.5", True),
        ("final loss 0.5", "final accuracy 0.5", False),
        ("done", "done", True),
    ],
)
def test_printed_results_are_compared_number_by_number(
    original: str, ported: str, agree: bool
) -> None:
    a = V.Run("original", 0, 1.0, f"warming up\n{original}\n", "")
    b = V.Run("port", 0, 1.0, f"warming up\n{ported}\n", "")
    assert V._compare(a, b, tolerance=1e-6)[0] is agree


@pytest.mark.parametrize("mixed", [False, True])
def test_different_results_of_a_mixed_precision_program_say_why(mixed: bool) -> None:
    original = V.Run("original", 0, 1.0, "final loss 3.75\n", "")
    ported = V.Run("port", 0, 1.0, "final loss 5.11\n", "")
    agree, difference = V._compare(original, ported, tolerance=1e-6)
    verdict = V.Verdict(original, ported, "cuda", 1e-6, agree, difference, [], mixed)
    [finding] = V.findings(verdict, "train.py")
    assert "results differ" in finding.message
    assert ("lower precision (autocast, GradScaler)" in finding.message) is mixed


def test_arguments_after_the_double_dash_need_verify(script: Path) -> None:
    assert main(["port", str(script), "--", "--epochs", "1"]) == 2


def test_a_real_program_verifies_on_the_simulated_device(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    path = tmp_path / "fit.py"
    path.write_text(
        textwrap.dedent(
            """
            import argparse
            import torch
            import torch.nn as nn

            parser = argparse.ArgumentParser()
            parser.add_argument("--steps", type=int, default=100)
            steps = parser.parse_args().steps
            torch.manual_seed(0)
            model = nn.Linear(3, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            x, y = torch.randn(16, 3), torch.randn(16, 1)
            for _ in range(steps):
                loss = ((model(x) - y) ** 2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            print(f"final loss {loss.item():.8f}")
            """
        )
    )
    code = main(["port", "--verify", "--timeout", "300", str(path), "--", "--steps", "3"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "ran to the end" in err and "results agree" in err
