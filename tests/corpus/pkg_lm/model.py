"""A transformer language model (sequence-first) using the mask helpers."""

import torch.nn as nn

from .masks import causal_mask, sinusoid_table


class TransformerLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.positions = sinusoid_table(64, cfg.d_model)
        layer = nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, 2 * cfg.d_model, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, cfg.n_layers, enable_nested_tensor=False)
        self.decoder = nn.Linear(cfg.d_model, cfg.vocab_size)

    def forward(self, src):
        seq_len = src.size(0)
        x = self.embed(src) + self.positions[:seq_len].unsqueeze(1)
        x = self.encoder(x, mask=causal_mask(seq_len))
        return self.decoder(x)
