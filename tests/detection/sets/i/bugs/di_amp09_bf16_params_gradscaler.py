# source: https://github.com/decoderesearch/SAELens/pull/723
# area: AMP
# bug: the SAE parameters are stored in bfloat16 and still routed through a GradScaler, whose CUDA unscale kernel has no BFloat16 implementation (NotImplementedError); bf16 needs no loss scaling at all
import torch
import torch.nn as nn
from dataclasses import dataclass


@dataclass
class SAETrainConfig:
    d_in: int = 128
    d_sae: int = 512
    dtype: str = "bfloat16"
    autocast: bool = True
    l1_coefficient: float = 1e-3
    lr: float = 3e-4
    batch_size: int = 256
    total_steps: int = 20


class SparseAutoencoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.W_enc = nn.Parameter(torch.randn(cfg.d_in, cfg.d_sae) * 0.02)
        self.b_enc = nn.Parameter(torch.zeros(cfg.d_sae))
        self.W_dec = nn.Parameter(torch.randn(cfg.d_sae, cfg.d_in) * 0.02)
        self.b_dec = nn.Parameter(torch.zeros(cfg.d_in))

    def forward(self, x):
        acts = torch.relu((x - self.b_dec) @ self.W_enc + self.b_enc)
        return acts @ self.W_dec + self.b_dec, acts


class SAETrainer:
    def __init__(self, cfg, device):
        self.cfg = cfg
        self.device = device
        self.sae = SparseAutoencoder(cfg).to(device=device, dtype=getattr(torch, cfg.dtype))  # expect[bf]: any
        self.optimizer = torch.optim.Adam(self.sae.parameters(), lr=cfg.lr)
        amp_on = cfg.autocast and device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda", enabled=amp_on)  # expect[bf]: any
        self.amp_on = amp_on

    def train_step(self, acts_in):
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=self.device.type, dtype=torch.bfloat16, enabled=self.amp_on):
            recon, feats = self.sae(acts_in)
            mse = (recon.float() - acts_in.float()).pow(2).sum(-1).mean()
            l1 = feats.float().abs().sum(-1).mean()
            loss = mse + self.cfg.l1_coefficient * l1
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.optimizer)
        torch.nn.utils.clip_grad_norm_(self.sae.parameters(), 1.0)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.detach(), (feats > 0).float().sum(-1).mean().detach()

    def fit(self, activation_store):
        stats = []
        for step in range(self.cfg.total_steps):
            batch = activation_store.next_batch(self.cfg.batch_size)
            stats.append(torch.stack(self.train_step(batch)))
        return torch.stack(stats)


class SyntheticActivationStore:
    def __init__(self, d_in, device, dtype, seed=0):
        self.gen = torch.Generator(device="cpu").manual_seed(seed)
        self.dirs = torch.randn(64, d_in, generator=self.gen)
        self.device, self.dtype = device, dtype

    def next_batch(self, n):
        coeffs = torch.relu(torch.randn(n, 64, generator=self.gen) - 1.0)
        return (coeffs @ self.dirs).to(self.device, self.dtype)


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    cfg = SAETrainConfig()
    trainer = SAETrainer(cfg, device)
    store = SyntheticActivationStore(cfg.d_in, device, getattr(torch, cfg.dtype))
    stats = trainer.fit(store)
    print("final loss %.4f, L0 %.1f" % tuple(stats[-1].tolist()))
