import argparse

import torch


def build_mask(lengths, n, device):
    mask = torch.zeros(len(lengths), n, dtype=torch.bool)
    for i, length in enumerate(lengths):
        mask[i, length:] = True
    return mask.to(device)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu", type=int, default=0)
    args = parser.parse_args()
    device = torch.device(f"cuda:{args.gpu}" if torch.cuda.is_available() else "cpu")
    scores = torch.randn(2, 5, device=device)
    return scores.masked_fill(build_mask([3, 5], 5, device), 0.0)


def worker(local_rank):
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    weights = torch.load("w.pt", map_location="cpu")
    return weights.cuda(), device
