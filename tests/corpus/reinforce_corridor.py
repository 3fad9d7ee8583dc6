"""REINFORCE on a tiny corridor world written in NumPy.

Actions are drawn with NumPy from the policy's probabilities; log-probabilities and
rewards are kept in Python lists on the policy, and returns are built in a list too.
"""

import argparse
from collections import deque

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

parser = argparse.ArgumentParser(description="REINFORCE example")
parser.add_argument("--gamma", type=float, default=0.95)
parser.add_argument("--seed", type=int, default=543)
parser.add_argument("--episodes", type=int, default=25)
args = parser.parse_args()


class Corridor:
    """Start in cell 0 of a corridor; reaching the last cell pays 1, each step costs 0.05."""

    def __init__(self, length=5, max_steps=12):
        self.length, self.max_steps = length, max_steps

    def reset(self):
        self.pos, self.steps = 0, 0
        return self._obs()

    def _obs(self):
        obs = np.zeros(self.length, dtype=np.float32)
        obs[self.pos] = 1.0
        return obs

    def step(self, action):
        self.pos = min(max(self.pos + (1 if action == 1 else -1), 0), self.length - 1)
        self.steps += 1
        done = self.pos == self.length - 1 or self.steps >= self.max_steps
        reward = 1.0 if self.pos == self.length - 1 else -0.05
        return self._obs(), reward, done


class Policy(nn.Module):
    def __init__(self, n_obs=5, n_actions=2):
        super().__init__()
        self.affine1 = nn.Linear(n_obs, 32)
        self.affine2 = nn.Linear(32, n_actions)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        return F.softmax(self.affine2(F.relu(self.affine1(x))), dim=1)


env = Corridor()
rng = np.random.RandomState(args.seed)
torch.manual_seed(args.seed)
policy = Policy()
optimizer = optim.Adam(policy.parameters(), lr=1e-2)
eps = np.finfo(np.float32).eps.item()


def select_action(state):
    state = torch.from_numpy(state).float().unsqueeze(0)
    probs = policy(state)
    p = probs.detach().numpy()[0].astype(np.float64)
    action = rng.choice(len(p), p=p / p.sum())
    policy.saved_log_probs.append(torch.log(probs[0, action]))
    return action


def finish_episode():
    R = 0
    returns = deque()
    for r in policy.rewards[::-1]:
        R = r + args.gamma * R
        returns.appendleft(R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    policy_loss = []
    for log_prob, R in zip(policy.saved_log_probs, returns):
        policy_loss.append(-log_prob * R)
    optimizer.zero_grad()
    loss = torch.stack(policy_loss).sum()
    loss.backward()
    optimizer.step()
    del policy.rewards[:]
    del policy.saved_log_probs[:]
    return loss.item()


def main():
    running_reward = 0.0
    for i_episode in range(1, args.episodes + 1):
        state, ep_reward, done = env.reset(), 0.0, False
        while not done:
            action = select_action(state)
            state, reward, done = env.step(action)
            policy.rewards.append(reward)
            ep_reward += reward
        running_reward = 0.1 * ep_reward + 0.9 * running_reward
        finish_episode()
        if i_episode % 5 == 0:
            print(f"Episode {i_episode}\tLast reward: {ep_reward:.2f}\tAverage: {running_reward:.2f}")
    with torch.no_grad():
        start = torch.from_numpy(env.reset()).unsqueeze(0)
        right = policy(start)[0, 1].item()
    print(f"final loss {-np.log(right):.8f}")


if __name__ == "__main__":
    main()
