"""Each example script's mistake is reported at its line; the correct variants get nothing."""

from __future__ import annotations

import pytest
from runtime_support import SCRIPTS, expected, found, run_script

# script -> the modes it runs in (None = the plain CPU, "cuda" = --simulate cuda)
BAD = {
    "bad_factory_in_forward.py": ["cuda"],
    "bad_plain_list.py": ["cuda"],
    "bad_batch_not_moved.py": ["cuda"],
    "bad_cross_gpu.py": ["cuda:2"],
    "bad_float64.py": ["cuda"],
    "bad_float64_model.py": [None],
    "bad_promotion.py": [None, "cuda"],
    "bad_integer_input.py": [None, "cuda"],
    "bad_syncs.py": ["cuda"],
    "bad_non_blocking.py": ["cuda"],
    "bad_starvation.py": [None, "cuda"],
}
GOOD = {
    "good_training.py": [None, "cuda"],
    "good_non_blocking.py": ["cuda"],
    "good_starvation.py": [None, "cuda"],
}


@pytest.mark.parametrize(("name", "simulate"), [(n, m) for n, modes in BAD.items() for m in modes])
def test_bad_script_is_reported_at_the_marked_lines(name: str, simulate: str | None) -> None:
    script = SCRIPTS / name
    _, w = run_script(script, simulate)
    assert expected(script) <= found(w, script), [str(f.location) + f.message for f in w.findings]


@pytest.mark.parametrize(("name", "simulate"), [(n, m) for n, modes in GOOD.items() for m in modes])
def test_correct_script_gets_no_findings(name: str, simulate: str | None) -> None:
    code, w = run_script(SCRIPTS / name, simulate)
    # Starvation is a timing: on a loaded machine any loop can wait; only its own pair pins it.
    timing = set() if name == "good_starvation.py" else {"TP250"}
    assert code == 0
    assert [f for f in w.findings if f.code not in timing] == []


def test_first_non_finite_op_is_reported_with_check_finite() -> None:
    script = SCRIPTS / "bad_nonfinite.py"
    _, w = run_script(script, check_finite=True)
    assert found(w, script) == expected(script)


def test_non_finite_values_are_not_checked_by_default() -> None:
    script = SCRIPTS / "bad_nonfinite.py"
    _, w = run_script(script)
    assert found(w, script) == set()
