"""Actor-critic with a shared body, Categorical sampling and a smooth-L1 critic loss.

The environment is a two-armed drifting bandit written in Python; saved actions are
namedtuples of (log_prob, value) and the returns are built in a Python list.
"""

import argparse
from collections import namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

SavedAction = namedtuple("SavedAction", ["log_prob", "value"])


class DriftingBandit:
    """State: a 3-feature context. Arm 0 pays when the first feature is positive, arm 1 otherwise."""

    def __init__(self, seed, horizon=8):
        self.rng = np.random.default_rng(seed)
        self.horizon = horizon

    def reset(self):
        self.t = 0
        self.state = self.rng.standard_normal(3).astype(np.float32)
        return self.state

    def step(self, action):
        good = 0 if self.state[0] > 0 else 1
        reward = 1.0 if action == good else 0.0
        self.t += 1
        self.state = self.rng.standard_normal(3).astype(np.float32)
        return self.state, reward, self.t >= self.horizon


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(3, 32)
        self.action_head = nn.Linear(32, 2)
        self.value_head = nn.Linear(32, 1)
        self.saved_actions = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        return F.softmax(self.action_head(x), dim=-1), self.value_head(x)


def select_action(model, state):
    state = torch.from_numpy(state).float()
    probs, state_value = model(state)
    m = Categorical(probs)
    action = m.sample()
    model.saved_actions.append(SavedAction(m.log_prob(action), state_value))
    return action.item()


def finish_episode(model, optimizer, gamma, eps):
    R = 0
    policy_losses, value_losses, returns = [], [], []
    for r in model.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for (log_prob, value), R in zip(model.saved_actions, returns):
        advantage = R - value.item()
        policy_losses.append(-log_prob * advantage)
        value_losses.append(F.smooth_l1_loss(value, torch.tensor([R])))
    optimizer.zero_grad()
    loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum()
    loss.backward()
    optimizer.step()
    del model.rewards[:]
    del model.saved_actions[:]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gamma", type=float, default=0.9)
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    env = DriftingBandit(args.seed)
    model = Policy()
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    eps = np.finfo(np.float32).eps.item()
    for episode in range(args.episodes):
        state, done = env.reset(), False
        while not done:
            action = select_action(model, state)
            state, reward, done = env.step(action)
            model.rewards.append(reward)
        finish_episode(model, optimizer, args.gamma, eps)
    probe = torch.tensor([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]])
    with torch.no_grad():
        probs, _ = model(probe)
    # Cross-entropy of the greedy-correct arm on two probe contexts.
    loss = -(torch.log(probs[0, 0]) + torch.log(probs[1, 1])) / 2
    print(f"final loss {loss.item():.8f}")


if __name__ == "__main__":
    main()
