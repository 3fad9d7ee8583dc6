"""REINFORCE with every tensor placed on the chosen device: states moved as they are made,
returns created with device=, and a NumPy environment on the host."""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

parser = argparse.ArgumentParser()
parser.add_argument("--gamma", type=float, default=0.9)
parser.add_argument("--episodes", type=int, default=15)
parser.add_argument("--cpu", action="store_true", help="run on the CPU even when CUDA is there")
args = parser.parse_args()
device = torch.device("cpu" if args.cpu or not torch.cuda.is_available() else "cuda")


class LineWorld:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def reset(self):
        self.x, self.t = float(self.rng.uniform(-1, 1)), 0
        return np.array([self.x, 0.0], dtype=np.float32)

    def step(self, action):
        self.x += 0.25 if action == 1 else -0.25
        self.t += 1
        reward = -abs(self.x)
        return np.array([self.x, self.t / 10], dtype=np.float32), reward, self.t >= 10


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(2, 24), nn.Tanh(), nn.Linear(24, 2))

    def forward(self, x):
        return F.softmax(self.fc(x), dim=-1)


torch.manual_seed(0)
env = LineWorld(0)
policy = Policy().to(device)
optimizer = torch.optim.Adam(policy.parameters(), lr=0.02)
for episode in range(args.episodes):
    state, done, log_probs, rewards = env.reset(), False, [], []
    while not done:
        probs = policy(torch.from_numpy(state).to(device))
        dist = Categorical(probs)
        action = dist.sample()
        log_probs.append(dist.log_prob(action))
        state, reward, done = env.step(action.item())
        rewards.append(reward)
    R, returns = 0.0, []
    for r in reversed(rewards):
        R = r + args.gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns, device=device)
    returns = (returns - returns.mean()) / (returns.std() + 1e-8)
    loss = -(torch.stack(log_probs) * returns).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
probe = torch.tensor([[0.8, 0.0], [-0.8, 0.0]], device=device)
with torch.no_grad():
    probs = policy(probe)
final = -(torch.log(probs[0, 0]) + torch.log(probs[1, 1])) / 2
print(f"final loss {final.item():.8f}")
