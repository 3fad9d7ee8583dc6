# source: https://github.com/openvdb/fvdb-reality-capture/pull/308
# area: transfer & sync
# bug: logger.debug gets an f-string containing loss.item(), which is evaluated (and syncs the GPU) every step even though debug logging is off
import logging
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
logger = logging.getLogger("segmentation")
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class SegConfig:
    n_gaussians: int = 4096
    feat_dim: int = 16
    enc_dim: int = 32
    rays_per_batch: int = 512
    steps: int = 40
    grad_accum: int = 2
    log_every: int = 20


class GaussianFeatureField(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.means = nn.Parameter(torch.randn(cfg.n_gaussians, 3))
        self.features = nn.Parameter(0.1 * torch.randn(cfg.n_gaussians, cfg.feat_dim))
        self.encoder = nn.Sequential(nn.Linear(cfg.feat_dim + 1, 64), nn.ReLU(), nn.Linear(64, cfg.enc_dim))

    def encode(self, gaussian_ids, scales):
        feats = self.features[gaussian_ids].mean(1)
        return F.normalize(self.encoder(torch.cat([feats, scales[:, None]], dim=-1)), dim=-1)


def sample_minibatch(cfg):
    ids = torch.randint(0, cfg.n_gaussians, (cfg.rays_per_batch, 8), device=device)
    scales = torch.rand(cfg.rays_per_batch, device=device)
    instance = torch.randint(0, 12, (cfg.rays_per_batch,), device=device)
    return ids, scales, instance


def grouping_loss(emb, instance, margin=0.5):
    sim = emb @ emb.T
    same = (instance[:, None] == instance[None, :]).float()
    pull = ((1.0 - sim) * same).sum() / same.sum().clamp_min(1.0)
    push = (F.relu(sim - margin) * (1.0 - same)).sum() / (1.0 - same).sum().clamp_min(1.0)
    return {"pull": pull, "push": push, "total_loss": pull + push}


def train(cfg):
    model = GaussianFeatureField(cfg).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    running = torch.zeros((), device=device)
    for step in range(cfg.steps):
        ids, scales, instance = sample_minibatch(cfg)
        emb = model.encode(ids, scales)
        loss_dict = grouping_loss(emb, instance)
        loss = loss_dict["total_loss"]
        logger.debug(f"step {step} loss {loss.item():.5f}")  # expect: any
        (loss / cfg.grad_accum).backward()
        running += loss.detach()
        if (step + 1) % cfg.grad_accum == 0:
            opt.step()
            opt.zero_grad(set_to_none=True)
        if (step + 1) % cfg.log_every == 0:
            logger.info("step %d mean loss %.5f", step + 1, (running / cfg.log_every).item())
            running.zero_()
    return model


if __name__ == "__main__":
    torch.manual_seed(0)
    train(SegConfig())
