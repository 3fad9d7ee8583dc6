# source: https://github.com/jcwleo/random-network-distillation-pytorch/pull/14
# area: device placement
# bug: the per-step policy distributions are kept as GPU tensors and later fed to np.vstack, which cannot convert CUDA tensors to numpy
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class ToyGridEnv:
    """Vectorised toy environment: observation is a noisy one-hot position."""

    def __init__(self, n_envs, size=8, seed=0):
        self.rng = np.random.default_rng(seed)
        self.n_envs, self.size = n_envs, size
        self.pos = self.rng.integers(0, size, n_envs)

    def observe(self):
        obs = np.zeros((self.n_envs, self.size), dtype=np.float32)
        obs[np.arange(self.n_envs), self.pos] = 1.0
        return obs + 0.05 * self.rng.standard_normal(obs.shape).astype(np.float32)

    def step(self, actions):
        self.pos = np.clip(self.pos + np.where(actions == 1, 1, -1), 0, self.size - 1)
        reward = (self.pos == self.size - 1).astype(np.float32)
        return self.observe(), reward


class ActorCritic(nn.Module):
    def __init__(self, obs_dim, n_actions):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, 64), nn.ReLU())
        self.pi = nn.Linear(64, n_actions)
        self.v_ext = nn.Linear(64, 1)
        self.v_int = nn.Linear(64, 1)

    def forward(self, x):
        h = self.body(x)
        return self.pi(h), self.v_ext(h).squeeze(-1), self.v_int(h).squeeze(-1)


class RNDAgent:
    def __init__(self, obs_dim, n_actions, device):
        self.device = device
        self.model = ActorCritic(obs_dim, n_actions).to(device)
        self.target = nn.Linear(obs_dim, 32).to(device)
        self.predictor = nn.Sequential(nn.Linear(obs_dim, 64), nn.ReLU(), nn.Linear(64, 32)).to(device)

    @torch.no_grad()
    def get_action(self, obs):
        obs_t = torch.from_numpy(obs).to(self.device)
        logits, v_ext, v_int = self.model(obs_t)
        policy = F.softmax(logits, dim=-1)
        actions = torch.multinomial(policy, 1).squeeze(-1)
        return actions.cpu().numpy(), v_ext, v_int, policy

    @torch.no_grad()
    def intrinsic_reward(self, obs):
        obs_t = torch.from_numpy(obs).to(self.device)
        return (self.target(obs_t) - self.predictor(obs_t)).pow(2).sum(-1) / 2


def collect_rollout(agent, env, n_steps):
    obs = env.observe()
    total_policy, total_int_reward, total_ext_reward = [], [], []
    for _ in range(n_steps):
        actions, v_ext, v_int, policy = agent.get_action(obs)
        next_obs, reward = env.step(actions)
        total_int_reward.append(agent.intrinsic_reward(next_obs))
        total_ext_reward.append(reward)
        total_policy.append(policy)
        obs = next_obs
    int_reward = torch.stack(total_int_reward).cpu().numpy()
    ext_reward = np.stack(total_ext_reward)
    total_logging_policy = np.vstack(total_policy)  # expect: any
    return int_reward, ext_reward, total_logging_policy


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    env = ToyGridEnv(n_envs=16)
    agent = RNDAgent(obs_dim=8, n_actions=2, device=device)
    for update in range(3):
        int_r, ext_r, logged_policy = collect_rollout(agent, env, n_steps=32)
        entropy = -(logged_policy * np.log(logged_policy + 1e-8)).sum(-1).mean()
        print(f"update {update}: int={int_r.mean():.4f} ext={ext_r.mean():.3f} entropy={entropy:.3f}")
