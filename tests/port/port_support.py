"""Helpers for the port tests: the corpus, its programs, the tolerances, and subprocesses."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
RUNNER = Path(__file__).resolve().parent / "corpus_runner.py"
TORCHPORT = Path(sys.executable).with_name("torchport")
TIMEOUT = 480

# CPU-only originals, written without any device logic ("-m:" entries are packages).
PROGRAMS = [
    "actor_critic_categorical.py",
    "amp_legacy.py",
    "bf16_autocast_cpu.py",
    "char_rnn_sampling.py",
    "checkpoint_resume_rng.py",
    "checkpoint_roundtrip.py",
    "classifier_eval_helpers.py",
    "cnn_classifier.py",
    "collate_dict_batches.py",
    "custom_autograd_ste.py",
    "dataparallel_mlp.py",
    "dcgan_noise.py",
    "denoising_autoencoder.py",
    "early_stopping_best_state.py",
    "forward_forward_layers.py",
    "from_imports_commented.py",
    "gan_1d_mixture.py",
    "gcn_index_add.py",
    "gpt_generate.py",
    "grad_accumulation.py",
    "graph_attention_scatter.py",
    "hardcoded_device.py",
    "knowledge_distillation.py",
    "layer_list_mlp.py",
    "lr_schedulers_plateau.py",
    "lstm_pos_tagger.py",
    "metrics_numpy.py",
    "mlp_regression.py",
    "module_constants_closure.py",
    "multi_input_tabular.py",
    "numpy_dataset.py",
    "packed_gru_classifier.py",
    "recsys_negative_sampling.py",
    "regression_poly_features.py",
    "reinforce_corridor.py",
    "rnn_sequence.py",
    "seq2seq_teacher_forcing.py",
    "siamese_contrastive.py",
    "simclr_ntxent.py",
    "sklearn_style_metrics.py",
    "super_resolution_pixelshuffle.py",
    "text_classifier.py",
    "time_series_lbfgs.py",
    "train_eval_loops.py",
    "transformer_tiny.py",
    "triplet_mining.py",
    "tuple_batches_splat.py",
    "vae_reparam.py",
    "weighted_sampler_kwargs.py",
    "word_lm_batchify.py",
    "-m:pkg_app.train",
    "-m:pkg_lm.train",
    "-m:pkg_vision.train",
]
# Already device-aware, as published code is: `port` must leave them behaving as before.
AWARE = [
    "aware/amp_modern.py",
    "aware/checkpoint_map_location.py",
    "aware/cuda_calls_legacy.py",
    "aware/dcgan_ngpu.py",
    "aware/gcn_accel.py",
    "aware/loader_kwargs_pin.py",
    "aware/mnist_accel.py",
    "aware/reinforce_device.py",
    "aware/seq2seq_device.py",
    "aware/siamese_accel.py",
    "aware/transformer_mask_device.py",
    "aware/vae_cuda_flag.py",
    "aware/word_lm_device.py",
]
# Designed for equivalence under DDP: deterministic order (shuffle=False), plain SGD, no dropout
# or batch norm, a global batch that splits evenly, the final loss measured on the full data.
DISTRIBUTED = ["cnn_classifier.py", "dataparallel_mlp.py", "numpy_dataset.py", "rnn_sequence.py"]

# Device-aware programs with a deprecated API that the port may modernise: they must behave as
# before, but need not stay byte for byte as they were.
MODERNISED = {"aware/cuda_calls_legacy.py": "torch.cuda.amp.autocast and GradScaler"}

# Host-side work that a correct program does inside forward, as a share of the forward's ops:
# pack_padded_sequence sorts its CPU lengths (enforce_sorted=False) and hands the order over.
HOST_OPS_IN_FORWARD = {"packed_gru_classifier.py": 0.25}

# Programs whose forward passes run while an episode is collected, in another function than
# the backward() of its loss: `port --amp bf16` says so and leaves them in float32.
BF16_NOT_APPLIED = {
    "actor_critic_categorical.py": "actions are chosen in select_action, the loss is made later",
    "reinforce_corridor.py": "actions are chosen in select_action, the loss is made later",
}
# Programs with an nn.LSTM: oneDNN runs a bfloat16 LSTM only on CPUs with AVX-512 (cuDNN on
# any recent GPU), so their --amp bf16 port is run only where the CPU or a GPU can.
BF16_LSTM = {"lstm_pos_tagger.py", "word_lm_batchify.py"}

# What today's `port` still gets wrong: program -> (the checks it fails, why). The checks:
# rewritten (port changes it into code that compiles), cpu (the port prints the original's
# result; on a CUDA machine it runs on the GPU), bf16 (the --amp bf16 port runs close to it),
# simulated (runs under --simulate cuda with the same result, no device finding), forward
# (no op of the model's forward pass on the CPU), check (`check` finds no error in it), again
# (porting the port changes nothing), aware (a device-aware program behaves as before),
# untouched (a device-aware program is left byte for byte as it was), comments (each comment
# stays on its line). Each failing case is a strict xfail: when the port is fixed it fails
# until its entry here is removed.
PORT_NOT_YET: dict[str, tuple[str, str]] = {}


def not_yet(program: str, check: str) -> list[object]:
    """The xfail mark for ``program``'s ``check`` while the port still fails it (strict, so
    that a fixed port turns it into a failure until the entry is removed)."""
    import pytest

    checks, reason = PORT_NOT_YET.get(program, ("", ""))
    if check not in checks.split():
        return []
    return [pytest.mark.xfail(strict=True, reason=f"port not yet: {reason}")]


def cases(programs: list[str], check: str) -> list[object]:
    import pytest

    return [pytest.param(p, marks=not_yet(p, check), id=p) for p in programs]


def source_file(root: Path, program: str) -> Path:
    if program.startswith("-m:"):
        return root.joinpath(*program[3:].split(".")).with_suffix(".py")
    return root / program


def program_files(root: Path, program: str) -> list[Path]:
    """The files a program is made of: its own, or every file of its package."""
    if program.startswith("-m:"):
        return sorted((root / program[3:].split(".", maxsplit=1)[0]).rglob("*.py"))
    return [root / program]


def errors_in(findings: list[dict[str, Any]], root: Path, program: str) -> list[str]:
    """``check``'s error findings in ``program``'s files; paths are relative to ``root``,
    where ``check`` ran."""
    files = {f.resolve() for f in program_files(root, program)}
    return [
        f"{f['path']}:{f['line']}: {f['code']} {f['message']}"
        for f in findings
        if f["severity"] == "error" and (root / f["path"]).resolve() in files
    ]


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1", **extra)
    env.pop("PYTHONWARNINGS", None)
    return env


def start(args: list[str], cwd: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        args,
        cwd=cwd,
        env=child_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    return process.returncode, out, err


def results_of(process: subprocess.Popen[str]) -> dict[str, dict[str, str | None]]:
    code, out, err = finish(process)
    lines = out.strip().splitlines()
    if not lines:
        raise AssertionError(f"runner printed nothing (exit {code}): {err[-2000:]}")
    results: dict[str, dict[str, str | None]] = json.loads(lines[-1])
    return results


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def final_loss(line: str | None) -> float:
    assert line and line.startswith("final loss "), f"no final loss printed: {line!r}"
    return float(line.split()[-1])


def has_subcommand(name: str) -> bool:
    """Whether ``torchport <name>`` exists (other parts of torchport are built in parallel)."""
    return importlib.util.find_spec(f"torchport.cli.{name}") is not None


def halves(programs: list[str]) -> list[list[str]]:
    """Two interleaved halves, so that slow and fast programs spread over two interpreters."""
    return [programs[0::2], programs[1::2]]
