# source: https://github.com/pytorch/pytorch/issues/42838
# area: dtype
# bug: on CUDA the rollout config casts the Gaussian policy to float16, and MultivariateNormal.log_prob needs a triangular solve that CUDA does not implement for Half
from dataclasses import dataclass, field

import torch
import torch.nn as nn
from torch.distributions import MultivariateNormal


@dataclass
class RolloutConfig:
    obs_dim: int = 17
    act_dim: int = 6
    num_envs: int = 16
    horizon: int = 32
    gamma: float = 0.99
    dtype: torch.dtype = field(default_factory=lambda: torch.float16 if torch.cuda.is_available() else torch.float32)  # expect[h]: any


class GaussianPolicy(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden=64):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.mu = nn.Linear(hidden, act_dim)
        self.log_std = nn.Parameter(torch.full((act_dim,), -0.5))
        self.value = nn.Linear(hidden, 1)

    def dist(self, obs):
        h = self.body(obs)
        scale_tril = torch.diag_embed(self.log_std.exp().expand(obs.size(0), -1))
        return MultivariateNormal(self.mu(h), scale_tril=scale_tril), self.value(h).squeeze(-1)


class LinearDynamicsEnv:
    def __init__(self, cfg, device):
        g = torch.Generator().manual_seed(1)
        self.A = (torch.eye(cfg.obs_dim) * 0.95 + 0.01 * torch.randn(cfg.obs_dim, cfg.obs_dim, generator=g)).to(device)
        self.B = (0.1 * torch.randn(cfg.act_dim, cfg.obs_dim, generator=g)).to(device)
        self.state = torch.randn(cfg.num_envs, cfg.obs_dim, device=device)

    def step(self, action):
        self.state = self.state @ self.A.T + action.float() @ self.B
        reward = -(self.state.pow(2).mean(dim=1) + 0.01 * action.float().pow(2).sum(dim=1))
        return self.state, reward


@torch.no_grad()
def collect(policy, env, cfg):
    obs_buf, act_buf, logp_buf, rew_buf, val_buf = [], [], [], [], []
    obs = env.state
    for _ in range(cfg.horizon):
        obs_in = obs.to(cfg.dtype)
        pi, v = policy.dist(obs_in)
        action = pi.sample()
        logp = pi.log_prob(action)  # expect[h]: any
        obs_buf.append(obs_in); act_buf.append(action); logp_buf.append(logp); val_buf.append(v)
        obs, rew = env.step(action)
        rew_buf.append(rew)
    return [torch.stack(b) for b in (obs_buf, act_buf, logp_buf, rew_buf, val_buf)]


def discounted_returns(rewards, gamma):
    ret = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[0])
    for t in reversed(range(rewards.size(0))):
        running = rewards[t] + gamma * running
        ret[t] = running
    return ret


def main():
    cfg = RolloutConfig()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    policy = GaussianPolicy(cfg.obs_dim, cfg.act_dim).to(device=device, dtype=cfg.dtype).eval()
    env = LinearDynamicsEnv(cfg, device)
    obs, act, logp, rew, val = collect(policy, env, cfg)
    returns = discounted_returns(rew, cfg.gamma)
    adv = returns - val.float()
    print("batch", tuple(obs.shape), "mean logp", float(logp.float().mean()), "mean adv", float(adv.mean()))


if __name__ == "__main__":
    main()
