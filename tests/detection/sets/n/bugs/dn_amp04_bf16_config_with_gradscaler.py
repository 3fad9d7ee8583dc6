# source: https://github.com/HorizonRobotics/alf/pull/1734
# area: AMP
# bug: the algorithm builds a GradScaler whenever AMP is on, even though the configured amp_dtype is bfloat16; on a GPU every update pays for unscale/inf-check and a host sync in scaler.step for no benefit
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class AmpConfig:
    enable_amp: bool = True
    amp_dtype: torch.dtype = torch.bfloat16
    grad_clip: float = 10.0


class ActorCritic(nn.Module):
    def __init__(self, obs_dim=24, act_dim=6, hidden=128):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, act_dim)
        self.v = nn.Linear(hidden, 1)

    def forward(self, obs):
        h = self.trunk(obs)
        return self.pi(h), self.v(h).squeeze(-1)


class PPOAlgorithm:
    def __init__(self, model, cfg: AmpConfig, device):
        self.model = model
        self.cfg = cfg
        self.device = device
        self.optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
        self.use_amp = cfg.enable_amp and device.type == "cuda"
        self._grad_scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)  # expect: any

    def _loss(self, obs, actions, old_logp, adv, returns):
        with torch.autocast(device_type=self.device.type, dtype=self.cfg.amp_dtype, enabled=self.use_amp):
            logits, value = self.model(obs)
        logp_all = F.log_softmax(logits.float(), dim=-1)
        logp = logp_all.gather(1, actions[:, None]).squeeze(1)
        ratio = torch.exp(logp - old_logp)
        pg = -torch.min(ratio * adv, ratio.clamp(0.8, 1.2) * adv).mean()
        vf = F.mse_loss(value.float(), returns)
        ent = -(logp_all.exp() * logp_all).sum(-1).mean()
        return pg + 0.5 * vf - 0.01 * ent

    def update(self, batch):
        loss = self._loss(*batch)
        self.optimizer.zero_grad(set_to_none=True)
        self._grad_scaler.scale(loss).backward()
        self._grad_scaler.unscale_(self.optimizer)
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
        self._grad_scaler.step(self.optimizer)
        self._grad_scaler.update()
        return loss.detach()


def fake_rollout(n, obs_dim, act_dim, device):
    obs = torch.randn(n, obs_dim, device=device)
    actions = torch.randint(0, act_dim, (n,), device=device)
    old_logp = torch.full((n,), -1.8, device=device)
    adv = torch.randn(n, device=device)
    returns = torch.randn(n, device=device)
    return obs, actions, old_logp, adv, returns


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = ActorCritic().to(device)
    algo = PPOAlgorithm(model, AmpConfig(), device)
    losses = []
    for _ in range(4):
        rollout = fake_rollout(1024, 24, 6, device)
        for mb in range(0, 1024, 256):
            batch = tuple(t[mb:mb + 256] for t in rollout)
            losses.append(algo.update(batch))
    print("mean loss:", torch.stack(losses).mean().item())


if __name__ == "__main__":
    main()
