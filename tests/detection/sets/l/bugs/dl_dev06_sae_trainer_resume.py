# source: https://github.com/decoderesearch/SAELens/pull/731
# area: device placement
# bug: load_trainer_state calls torch.load without map_location, so the portable (CPU) sparsity statistics come back on the CPU and the first in-place accumulation with cuda feature activations fails after resuming on a GPU
import os
import tempfile
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

TRAINER_STATE_FILENAME = "trainer_state.pt"


@dataclass
class SAEConfig:
    d_in: int = 32
    d_sae: int = 128
    l1_coefficient: float = 1e-3
    lr: float = 3e-4
    batch_size: int = 64
    feature_sampling_window: int = 5
    device: str = "cuda" if torch.cuda.is_available() else "cpu"


class SparseAutoencoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.W_enc = nn.Parameter(torch.randn(cfg.d_in, cfg.d_sae) * 0.05)
        self.b_enc = nn.Parameter(torch.zeros(cfg.d_sae))
        self.W_dec = nn.Parameter(torch.randn(cfg.d_sae, cfg.d_in) * 0.05)
        self.b_dec = nn.Parameter(torch.zeros(cfg.d_in))

    def forward(self, x):
        feature_acts = F.relu((x - self.b_dec) @ self.W_enc + self.b_enc)
        return feature_acts @ self.W_dec + self.b_dec, feature_acts


class SAETrainer:
    def __init__(self, sae, cfg):
        self.sae = sae
        self.cfg = cfg
        self.optimizer = torch.optim.Adam(sae.parameters(), lr=cfg.lr)
        self.n_training_steps = 0
        self._reset_running_sparsity_stats()

    def _reset_running_sparsity_stats(self):
        self.act_freq_scores = torch.zeros(self.cfg.d_sae, device=self.cfg.device)
        self.n_forward_passes_since_fired = torch.zeros(self.cfg.d_sae, device=self.cfg.device)
        self.n_frac_active_tokens = 0

    def _train_step(self, activations):
        recon, feature_acts = self.sae(activations)
        mse = F.mse_loss(recon, activations)
        l1 = feature_acts.abs().sum(dim=-1).mean()
        loss = mse + self.cfg.l1_coefficient * l1
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        with torch.no_grad():
            fired = (feature_acts > 0).float().sum(dim=0)
            self.act_freq_scores += fired
            self.n_forward_passes_since_fired += 1
            self.n_forward_passes_since_fired[fired > 0] = 0
            self.n_frac_active_tokens += activations.shape[0]
        self.n_training_steps += 1
        if self.n_training_steps % self.cfg.feature_sampling_window == 0:
            self._reset_running_sparsity_stats()
        return loss.detach()

    def fit(self, activation_store, n_steps):
        losses = torch.stack([self._train_step(activation_store()) for _ in range(n_steps)])
        density = self.act_freq_scores / max(self.n_frac_active_tokens, 1)
        print(f"step {self.n_training_steps}: loss {losses.mean().item():.4f}, "
              f"mean feature density {density.mean().item():.3f}")

    def save_trainer_state(self, checkpoint_path):
        state = {
            "act_freq_scores": self.act_freq_scores.cpu(),
            "n_forward_passes_since_fired": self.n_forward_passes_since_fired.cpu(),
            "n_frac_active_tokens": self.n_frac_active_tokens,
            "n_training_steps": self.n_training_steps,
        }
        torch.save(state, os.path.join(checkpoint_path, TRAINER_STATE_FILENAME))

    def load_trainer_state(self, checkpoint_path):
        state_dict = torch.load(os.path.join(checkpoint_path, TRAINER_STATE_FILENAME))  # expect[l]: any
        self.act_freq_scores = state_dict["act_freq_scores"]  # expect[l]: any
        self.n_forward_passes_since_fired = state_dict["n_forward_passes_since_fired"]  # expect[l]: any
        self.n_frac_active_tokens = state_dict["n_frac_active_tokens"]
        self.n_training_steps = state_dict["n_training_steps"]


def main():
    torch.manual_seed(0)
    cfg = SAEConfig()
    basis = torch.randn(16, cfg.d_in, device=cfg.device)

    def activation_store():
        coeffs = F.relu(torch.randn(cfg.batch_size, 16, device=cfg.device))
        return coeffs @ basis

    sae = SparseAutoencoder(cfg).to(cfg.device)
    trainer = SAETrainer(sae, cfg)
    trainer.fit(activation_store, n_steps=7)
    with tempfile.TemporaryDirectory() as ckpt:
        trainer.save_trainer_state(ckpt)
        resumed = SAETrainer(sae, cfg)
        resumed.load_trainer_state(ckpt)
        resumed.fit(activation_store, n_steps=6)


if __name__ == "__main__":
    main()
