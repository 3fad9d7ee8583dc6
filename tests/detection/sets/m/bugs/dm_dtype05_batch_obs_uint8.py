# source: https://github.com/facebookresearch/habitat-lab/pull/297
# area: dtype
# bug: batch_obs calls .to(device=cuda, dtype=float) on uint8 RGB frames, so the blocking copy converts to float32 on the CPU first and ships 4x the bytes over PCIe every rollout step
from collections import defaultdict

import numpy as np
import torch
import torch.nn as nn


class FakeNavEnv:
    def __init__(self, seed, size=128):
        self.rng = np.random.default_rng(seed)
        self.size = size

    def _obs(self):
        return {
            "rgb": self.rng.integers(0, 256, (self.size, self.size, 3), dtype=np.uint8),
            "depth": self.rng.random((self.size, self.size, 1), dtype=np.float32),
            "pointgoal": self.rng.standard_normal(2).astype(np.float32),
        }

    def reset(self):
        return self._obs()

    def step(self, action):
        done = bool(self.rng.random() < 0.02)
        return self._obs(), float(action == 0) - 0.01, done


def batch_obs(observations, device):
    batch = defaultdict(list)
    for obs in observations:
        for sensor, value in obs.items():
            batch[sensor].append(value)
    out = {}
    for sensor, values in batch.items():
        out[sensor] = torch.from_numpy(np.stack(values)).to(device=device, dtype=torch.float)  # expect: any
    return out


class PointNavPolicy(nn.Module):
    def __init__(self, num_actions=4, hidden=256):
        super().__init__()
        self.visual = nn.Sequential(
            nn.Conv2d(4, 32, 8, stride=4), nn.ReLU(),
            nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
            nn.Conv2d(64, 32, 3, stride=2), nn.ReLU(),
            nn.AdaptiveAvgPool2d(4), nn.Flatten(),
        )
        self.fc = nn.Linear(32 * 16 + 2, hidden)
        self.actor = nn.Linear(hidden, num_actions)
        self.critic = nn.Linear(hidden, 1)

    def forward(self, obs):
        rgb = obs["rgb"].permute(0, 3, 1, 2) / 255.0
        depth = obs["depth"].permute(0, 3, 1, 2)
        feats = self.visual(torch.cat([rgb, depth], dim=1))
        h = torch.relu(self.fc(torch.cat([feats, obs["pointgoal"]], dim=1)))
        return self.actor(h), self.critic(h).squeeze(-1)


@torch.no_grad()
def collect_rollout(envs, policy, device, num_steps=16):
    observations = [env.reset() for env in envs]
    values, rewards = [], []
    for _ in range(num_steps):
        batch = batch_obs(observations, device)
        logits, value = policy(batch)
        actions = torch.distributions.Categorical(logits=logits).sample()
        values.append(value)
        step_out = [env.step(a) for env, a in zip(envs, actions.cpu().numpy())]
        observations = [env.reset() if done else obs for env, (obs, _, done) in zip(envs, step_out)]
        rewards.append(torch.tensor([r for _, r, _ in step_out]))
    return torch.stack(values), torch.stack(rewards).to(device)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    envs = [FakeNavEnv(seed) for seed in range(8)]
    policy = PointNavPolicy().to(device).eval()
    values, rewards = collect_rollout(envs, policy, device)
    print("rollout", tuple(values.shape), "mean reward", float(rewards.mean()))


if __name__ == "__main__":
    main()
