"""Attention masks and positional tables, built from sizes alone."""

import math

import torch


def causal_mask(size):
    """Float mask with -inf above the diagonal, as nn.TransformerEncoder expects."""
    return torch.triu(torch.full((size, size), float("-inf")), diagonal=1)


def sinusoid_table(max_len, dim):
    position = torch.arange(max_len).unsqueeze(1).float()
    div = torch.exp(torch.arange(0, dim, 2).float() * (-math.log(10000.0) / dim))
    table = torch.zeros(max_len, dim)
    table[:, 0::2] = torch.sin(position * div)
    table[:, 1::2] = torch.cos(position * div)
    return table
