# source: https://github.com/ikostrikov/pytorch-a2c-ppo-acktr-gail/issues/209
# area: dtype
# bug: the wrapper recognises discrete actions with isinstance(actions, torch.LongTensor), which is False for CUDA long tensors, so on the GPU the (N, 1) actions are not squeezed and the environments receive wrongly shaped actions
import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Categorical


class CorridorVecEnv:
    """N independent 1-D corridors; action 1 moves right, 0 moves left."""

    def __init__(self, num_envs, length=10, seed=0):
        self.num_envs = num_envs
        self.length = length
        self.rng = np.random.default_rng(seed)
        self.pos = np.zeros(num_envs, dtype=np.int64)

    def reset(self):
        self.pos = self.rng.integers(0, self.length, self.num_envs)
        return self._obs()

    def _obs(self):
        obs = np.zeros((self.num_envs, self.length), dtype=np.float32)
        obs[np.arange(self.num_envs), np.clip(self.pos, 0, self.length - 1)] = 1.0
        return obs

    def step(self, actions):
        self.pos = np.clip(self.pos + np.where(actions == 1, 1, -1), 0, self.length - 1)
        rewards = (self.pos == self.length - 1).astype(np.float32)
        done = rewards > 0
        self.pos[done] = 0
        return self._obs(), rewards, done


class VecPyTorch:
    def __init__(self, venv, device):
        self.venv = venv
        self.device = device

    def reset(self):
        return torch.from_numpy(self.venv.reset()).to(self.device)

    def step(self, actions):
        if isinstance(actions, torch.LongTensor):  # expect: any
            actions = actions.squeeze(1)
        obs, rew, done = self.venv.step(actions.cpu().numpy())
        obs = torch.from_numpy(obs).to(self.device)
        rew = torch.from_numpy(rew).unsqueeze(1).to(self.device)
        return obs, rew, torch.from_numpy(done)


class Policy(nn.Module):
    def __init__(self, obs_dim, n_actions):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh())
        self.pi = nn.Linear(64, n_actions)
        self.v = nn.Linear(64, 1)

    def act(self, obs):
        h = self.body(obs)
        dist = Categorical(logits=self.pi(h))
        action = dist.sample()
        return action.unsqueeze(-1), dist.log_prob(action).unsqueeze(-1), self.v(h)


def collect(policy, envs, steps):
    obs = envs.reset()
    log_probs, rewards, values = [], [], []
    for _ in range(steps):
        with torch.no_grad():
            action, logp, value = policy.act(obs)
        obs, rew, _ = envs.step(action)
        log_probs.append(logp)
        rewards.append(rew)
        values.append(value)
    return torch.stack(log_probs), torch.stack(rewards), torch.stack(values)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    envs = VecPyTorch(CorridorVecEnv(num_envs=8), device)
    policy = Policy(obs_dim=10, n_actions=2).to(device)
    log_probs, rewards, values = collect(policy, envs, steps=64)
    returns = rewards.flip(0).cumsum(0).flip(0)
    advantage = (returns - values).squeeze(-1)
    print("rollout:", tuple(rewards.shape), "mean reward", rewards.mean().item(), "adv std", advantage.std().item())


if __name__ == "__main__":
    main()
