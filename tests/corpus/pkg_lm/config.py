"""Hyper-parameters, as a dataclass the other modules import."""

from dataclasses import dataclass


@dataclass
class TrainConfig:
    vocab_size: int = 12
    d_model: int = 16
    n_heads: int = 2
    n_layers: int = 1
    seq_len: int = 10
    batch_size: int = 6
    epochs: int = 2
    lr: float = 0.01
    seed: int = 17
