"""The figures dev.py gpu reads from each step's output."""

from __future__ import annotations

import json
from pathlib import Path

from devtasks import steps

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="1" skipped="2" tests="10">
<testcase classname="tests.port.test_port_corpus" name="test_amp_legacy"><failure/></testcase>
<testcase classname="tests.transfer.test_transfer_ddp" name="test_ranks"><error/></testcase>
<testcase classname="tests.bench.test_bench_cli" name="test_ok"/>
</testsuite></testsuites>
"""


def test_junit_gives_counts_and_the_failing_tests(tmp_path: Path) -> None:
    (tmp_path / "junit.xml").write_text(JUNIT, encoding="utf-8")
    assert steps.junit_counts(tmp_path / "junit.xml") == {
        "passed": 6,
        "failed": 2,
        "skipped": 2,
        "failing_tests": [
            "tests.port.test_port_corpus::test_amp_legacy",
            "tests.transfer.test_transfer_ddp::test_ranks",
        ],
    }


def _loader(shares: list[float], idles: list[float | None]) -> str:
    rows = [
        {"regime": "1x copy", "mode": f"DeviceLoader prefetch={d}", "share_of_bound": share,
         "device_idle_share": idle}
        for d, share, idle in zip((1, 2, 4), shares, idles, strict=True)
    ]  # fmt: skip
    rows.append({"regime": "1x copy", "mode": "naive .to() loop", "share_of_bound": 0.6,
                 "device_idle_share": 0.4})  # fmt: skip
    regimes = [{"regime": "1x copy", "unavoidable_idle_share": 0.01}]
    return json.dumps({"device": "H100", "rows": rows, "regimes": regimes, "memory": {}})


def test_loader_goal_is_every_depth_at_95_percent_with_5_percent_excess_idle_at_most() -> None:
    met = steps.loader_figures(_loader([0.99, 0.97, 0.951], [0.02, 0.03, 0.05]))
    assert met["goal_met"] is True and met["worst_deviceloader_share"] == 0.951
    assert met["share_of_bound"]["1x copy"]["naive .to() loop"] == 0.6  # not in the goal
    slow = steps.loader_figures(_loader([0.99, 0.97, 0.836], [0.02, 0.03, 0.05]))
    assert slow["goal_met"] is False
    idle = steps.loader_figures(_loader([0.99, 0.97, 0.96], [0.02, 0.09, 0.05]))
    assert idle["goal_met"] is False and round(idle["worst_deviceloader_excess_idle"], 2) == 0.08
    unmeasured = steps.loader_figures(_loader([0.99, 0.97, 0.96], [None, None, None]))
    assert unmeasured["goal_met"] is None


def test_doctor_figures_keep_the_verdict_the_machine_and_the_smoke_test() -> None:
    report = {
        "verdict": "GPU usable: NVIDIA H100 80GB HBM3 (cuda:0)",
        "findings": [{"code": "TP529"}],
        "facts": {"torch": "2.11.0+cu130", "gpus": ["NVIDIA H100 80GB HBM3"],
                  "raw_probe": {"smoke": {"h2d": {"pinned_gbps": 48.1}, "device": "cuda:0"}}},
    }  # fmt: skip
    figures = steps.doctor_figures(json.dumps(report))
    assert figures["verdict"].startswith("GPU usable") and figures["findings"] == ["TP529"]
    assert figures["torch"] == "2.11.0+cu130" and figures["smoke"] == {"h2d": {"pinned_gbps": 48.1}}


def test_a_benchmark_that_prints_lines_is_recorded_as_lines() -> None:
    assert steps.lines_or_json("mlp 150 steps\nconv 150 steps\n") == {
        "lines": ["mlp 150 steps", "conv 150 steps"]
    }
    assert steps.lines_or_json('{"mlp": 1.2}') == {"result": {"mlp": 1.2}}


def test_the_run_report_gives_the_loop_s_wait_against_its_step_time(tmp_path: Path) -> None:
    report = {"findings": [{"code": "TP250"}], "facts": {"loaders": [
        {"site": "cpu_training.py:73", "loader": "DataLoader", "batches": 21, "wait_ms": 24.0,
         "step_ms": 415.0, "num_workers": 0}]}}  # fmt: skip
    (tmp_path / "run.json").write_text(json.dumps(report), encoding="utf-8")
    figures = steps.run_report_figures(tmp_path / "run.json")
    assert figures["findings"] == ["TP250"]
    assert figures["loaders"][0]["wait_ms"] == 24.0 and "num_workers" not in figures["loaders"][0]


def test_the_report_shows_the_loader_table_and_what_was_not_measured() -> None:
    from devtasks import report
    from devtasks.steps import Result

    result = json.loads(_loader([0.99, 0.97, 0.836], [0.02, 0.03, 0.05]))
    result["regimes"][0].update(achieved_ratio=1.02, model_iters=9)
    result["memory"] = {"extra_mib_per_prefetch_slot": 4.0, "drift_steps": 2000,
                        "reserved_drift_mib": 0.0}  # fmt: skip
    figures = steps.loader_figures(json.dumps(result))
    markdown = report.as_markdown(
        {}, [Result("bench-loader", ["b"], {}, 0, 9.0, True, figures, "l")]
    )
    assert "| 1x copy | 99.0 % | 97.0 % | 83.6 % | 60.0 % |" in markdown
    assert "- 1x copy: the step took 1.02 x the copy (9 products)" in markdown
    assert "met: **no**" in markdown
    assert "per prefetch slot: 4.0 MiB; reserved-memory drift over 2000 steps: 0.0 MiB" in markdown
    figures["memory"] = {"not_measured": "needs CUDA"}
    figures["goal_met"] = None
    markdown = report.as_markdown(
        {}, [Result("bench-loader", ["b"], {}, 0, 9.0, True, figures, "l")]
    )
    assert "drift: not measured (needs CUDA)" in markdown and "met: not measured" in markdown
