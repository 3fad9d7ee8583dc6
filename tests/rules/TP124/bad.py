import argparse

import torch


def build_mask(lengths, n):
    mask = torch.zeros(len(lengths), n, dtype=torch.bool)
    for i, length in enumerate(lengths):
        mask[i, length:] = True
    return mask.cuda()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu", type=int, default=0)
    args = parser.parse_args()
    device = torch.device(f"cuda:{args.gpu}" if torch.cuda.is_available() else "cpu")
    scores = torch.randn(2, 5, device=device)
    return scores.masked_fill(build_mask([3, 5], 5), 0.0)
