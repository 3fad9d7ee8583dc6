# twin of: bugs/dh_dist01_fixmatch_sampler_epoch.py
# area: porting & distributed
# correct: both DistributedSamplers get set_epoch(epoch) before each epoch, so every rank reshuffles its shard consistently
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, RandomSampler, TensorDataset
from torch.utils.data.distributed import DistributedSampler


@dataclass
class FixMatchConfig:
    epochs: int = 3
    batch_size: int = 16
    mu: int = 2
    threshold: float = 0.9
    lambda_u: float = 1.0
    lr: float = 0.03


def setup():
    if "RANK" in os.environ and dist.is_available():
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        if torch.cuda.is_available():
            torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
        return True, device
    return False, torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_sets(n_labeled=64, n_unlabeled=256, dim=32, classes=10):
    g = torch.Generator().manual_seed(0)
    xl = torch.randn(n_labeled, dim, generator=g)
    yl = torch.randint(0, classes, (n_labeled,), generator=g)
    xu = torch.randn(n_unlabeled, dim, generator=g)
    return TensorDataset(xl, yl), TensorDataset(xu)


def weak_aug(x):
    return x + 0.05 * torch.randn_like(x)


def strong_aug(x):
    return x * (torch.rand_like(x) > 0.2) + 0.3 * torch.randn_like(x)


def build_loaders(cfg, labeled, unlabeled, distributed):
    if distributed:
        ls = DistributedSampler(labeled, shuffle=True, drop_last=True)
        us = DistributedSampler(unlabeled, shuffle=True, drop_last=True)
    else:
        ls, us = RandomSampler(labeled), RandomSampler(unlabeled)
    ll = DataLoader(labeled, batch_size=cfg.batch_size, sampler=ls, drop_last=True)
    ul = DataLoader(unlabeled, batch_size=cfg.batch_size * cfg.mu, sampler=us, drop_last=True)
    return ll, ul, ls, us


def train(cfg, model, ll, ul, ls, us, device, distributed):
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.9, nesterov=True)
    for epoch in range(cfg.epochs):
        if distributed:
            ls.set_epoch(epoch)
            us.set_epoch(epoch)
        model.train()
        total = torch.zeros((), device=device)
        steps = 0
        for (xl, yl), (xu,) in zip(ll, ul):
            xl, yl, xu = xl.to(device), yl.to(device), xu.to(device)
            logits_l = model(weak_aug(xl))
            loss_x = F.cross_entropy(logits_l, yl)
            with torch.no_grad():
                probs = torch.softmax(model(weak_aug(xu)), dim=-1)
                conf, pseudo = probs.max(dim=-1)
                mask = (conf >= cfg.threshold).float()
            loss_u = (F.cross_entropy(model(strong_aug(xu)), pseudo, reduction="none") * mask).mean()
            loss = loss_x + cfg.lambda_u * loss_u
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach()
            steps += 1
        print(f"epoch {epoch}: mean loss {(total / max(steps, 1)).item():.4f}")


def main():
    cfg = FixMatchConfig()
    distributed, device = setup()
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
    if distributed:
        ids = [device.index] if device.type == "cuda" else None
        model = nn.parallel.DistributedDataParallel(model, device_ids=ids)
    labeled, unlabeled = make_sets()
    ll, ul, ls, us = build_loaders(cfg, labeled, unlabeled, distributed)
    train(cfg, model, ll, ul, ls, us, device, distributed)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
