from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.utils.data import DistributedSampler, TensorDataset

SIZE = 40
RANKS = 2
WORKER = Path(__file__).with_name("ddp_transfer_worker.py")


def launch_env(gpus: int) -> dict[str, str]:
    """The ranks' environment: with fewer GPUs than ranks, the GPUs are hidden from them.

    Every rank would take cuda:LOCAL_RANK, and on a one-GPU machine rank 1 then fails with
    "invalid device ordinal"; hidden, every rank runs on the CPU, which gloo serves.
    """
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if gpus < RANKS:
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def _expected_device(rank: int) -> str:
    return f"cuda:{rank}" if torch.cuda.device_count() >= RANKS else "cpu"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _expected(rank: int, epoch: int) -> list[int]:
    sampler = DistributedSampler(
        TensorDataset(torch.arange(SIZE)), num_replicas=2, rank=rank, shuffle=True, seed=7
    )
    sampler.set_epoch(epoch)
    return list(sampler)


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, list[int]]]:
    out = tmp_path_factory.mktemp("ddp")
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(RANKS),
        "--master-port", str(_free_port()), str(WORKER), str(out), str(SIZE),
    ]  # fmt: skip
    env = launch_env(torch.cuda.device_count())
    done = subprocess.run(
        command, check=False, capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = {r: json.loads((out / f"rank{r}.json").read_text()) for r in range(RANKS)}
    for rank, result in results.items():
        assert result["devices"] == [_expected_device(rank)]
    return {rank: result["epochs"] for rank, result in results.items()}


def test_ranks_are_kept_off_gpus_that_are_not_there_for_each_of_them() -> None:
    assert launch_env(0)["CUDA_VISIBLE_DEVICES"] == ""
    assert launch_env(1)["CUDA_VISIBLE_DEVICES"] == ""
    assert launch_env(RANKS).get("CUDA_VISIBLE_DEVICES") == os.environ.get("CUDA_VISIBLE_DEVICES")


def test_each_rank_gets_its_shard_in_sampler_order(ranks: dict[int, dict[str, list[int]]]) -> None:
    for rank in (0, 1):
        for epoch in (0, 1):
            assert ranks[rank][str(epoch)] == _expected(rank, epoch)


def test_ranks_together_see_every_sample_exactly_once(
    ranks: dict[int, dict[str, list[int]]],
) -> None:
    for epoch in ("0", "1"):
        assert sorted(ranks[0][epoch] + ranks[1][epoch]) == list(range(SIZE))


def test_set_epoch_reaches_the_distributed_sampler(ranks: dict[int, dict[str, list[int]]]) -> None:
    assert ranks[0]["0"] != ranks[0]["1"]
