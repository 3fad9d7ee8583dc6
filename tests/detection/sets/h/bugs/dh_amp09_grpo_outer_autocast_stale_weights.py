# source: https://github.com/X-GenGroup/Flow-Factory/pull/186
# area: AMP
# bug: one bf16 autocast context wraps the whole inner optimisation loop, so on a GPU autocast's weight-cast cache keeps serving the bf16 copies made before the first optimizer.step() and the fp32 policy never sees its own updates (flat loss, KL stuck at 0)
import copy
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GRPOConfig:
    obs_dim: int = 16
    n_actions: int = 6
    group_size: int = 8
    n_prompts: int = 8
    inner_epochs: int = 4
    minibatch: int = 16
    clip_range: float = 0.2
    kl_beta: float = 0.05
    lr: float = 5e-3
    iterations: int = 3


class Policy(nn.Module):
    def __init__(self, cfg: GRPOConfig):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(cfg.obs_dim, 64), nn.Tanh(), nn.Linear(64, cfg.n_actions))

    def log_prob(self, obs, actions):
        logp = F.log_softmax(self.net(obs).float(), dim=-1)
        return logp.gather(-1, actions.unsqueeze(-1)).squeeze(-1)


class GRPOTrainer:
    def __init__(self, cfg: GRPOConfig, device):
        self.cfg = cfg
        self.device = device
        self.policy = Policy(cfg).to(device)
        self.ref_policy = copy.deepcopy(self.policy).requires_grad_(False)
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=cfg.lr)
        self.use_amp = device.type == "cuda"

    def autocast(self):
        if not self.use_amp:
            return nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)

    @torch.no_grad()
    def sample(self):
        obs = torch.randn(self.cfg.n_prompts, 1, self.cfg.obs_dim, device=self.device)
        obs = obs.expand(-1, self.cfg.group_size, -1).reshape(-1, self.cfg.obs_dim)
        with self.autocast():
            logits = self.policy.net(obs).float()
        actions = torch.distributions.Categorical(logits=logits).sample()
        rewards = (actions == obs[:, :3].sum(-1).gt(0).long()).float()
        grouped = rewards.view(self.cfg.n_prompts, self.cfg.group_size)
        adv = (grouped - grouped.mean(1, keepdim=True)) / (grouped.std(1, keepdim=True) + 1e-4)
        old_logp = torch.log_softmax(logits, -1).gather(-1, actions[:, None]).squeeze(-1)
        return obs, actions, adv.reshape(-1), old_logp, rewards.mean()

    def optimize(self, obs, actions, adv, old_logp):
        stats = []
        with self.autocast():  # expect: any
            for _ in range(self.cfg.inner_epochs):
                for idx in torch.randperm(obs.size(0), device=self.device).split(self.cfg.minibatch):
                    logp = self.policy.log_prob(obs[idx], actions[idx])
                    with torch.no_grad():
                        ref_logp = self.ref_policy.log_prob(obs[idx], actions[idx])
                    ratio = torch.exp(logp - old_logp[idx])
                    clipped = ratio.clamp(1 - self.cfg.clip_range, 1 + self.cfg.clip_range)
                    pg_loss = -torch.min(ratio * adv[idx], clipped * adv[idx]).mean()
                    kl = (torch.exp(ref_logp - logp) - (ref_logp - logp) - 1).mean()
                    loss = pg_loss + self.cfg.kl_beta * kl
                    self.optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    self.optimizer.step()
                    stats.append(torch.stack([loss.detach(), kl.detach()]))
        return torch.stack(stats).mean(0)

    def train(self):
        for it in range(self.cfg.iterations):
            obs, actions, adv, old_logp, reward = self.sample()
            loss, kl = self.optimize(obs, actions, adv, old_logp).tolist()
            print(f"iter {it}: reward {reward.item():.3f} loss {loss:.4f} kl {kl:.5f}")


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    GRPOTrainer(GRPOConfig(), device).train()
