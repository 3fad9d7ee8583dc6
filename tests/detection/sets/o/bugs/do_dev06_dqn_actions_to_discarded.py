# source: https://theneuralbase.com/pytorch/learn/beginner/tensor-device-cpu-vs-cuda/
# area: device placement
# bug: Tensor.to() is not in-place; the moved action batch is thrown away, so gather() on the cuda Q-values receives a cpu index tensor
import random
from collections import deque

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class ChainEnv:
    """Walk right along a chain of n states; reward 1 only at the far end."""

    def __init__(self, n=8):
        self.n = n
        self.pos = 0

    def reset(self):
        self.pos = 0
        return self._obs()

    def _obs(self):
        o = np.zeros(self.n, dtype=np.float32)
        o[self.pos] = 1.0
        return o

    def step(self, action):
        self.pos = min(self.pos + 1, self.n - 1) if action == 1 else max(self.pos - 1, 0)
        done = self.pos == self.n - 1
        return self._obs(), float(done), done


class ReplayBuffer:
    def __init__(self, capacity=5000):
        self.data = deque(maxlen=capacity)

    def push(self, *transition):
        self.data.append(transition)

    def sample(self, batch_size):
        s, a, r, s2, d = zip(*random.sample(self.data, batch_size))
        return (torch.from_numpy(np.stack(s)), torch.tensor(a, dtype=torch.long),
                torch.tensor(r), torch.from_numpy(np.stack(s2)), torch.tensor(d, dtype=torch.float32))

    def __len__(self):
        return len(self.data)


class DQNAgent:
    def __init__(self, obs_dim, n_actions, gamma=0.95, lr=1e-3, batch_size=32):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.q_net = nn.Sequential(nn.Linear(obs_dim, 64), nn.ReLU(), nn.Linear(64, n_actions)).to(self.device)
        self.target = nn.Sequential(nn.Linear(obs_dim, 64), nn.ReLU(), nn.Linear(64, n_actions)).to(self.device)
        self.target.load_state_dict(self.q_net.state_dict())
        self.opt = torch.optim.Adam(self.q_net.parameters(), lr=lr)
        self.gamma, self.batch_size, self.n_actions = gamma, batch_size, n_actions
        self.buffer = ReplayBuffer()

    @torch.no_grad()
    def act(self, obs, eps):
        if random.random() < eps:
            return random.randrange(self.n_actions)
        q = self.q_net(torch.from_numpy(obs).unsqueeze(0).to(self.device))
        return int(q.argmax(1))

    def learn(self):
        states, actions, rewards, next_states, dones = self.buffer.sample(self.batch_size)
        states = states.to(self.device)
        actions.to(self.device)  # expect: any
        rewards = rewards.to(self.device)
        next_states, dones = next_states.to(self.device), dones.to(self.device)
        q = self.q_net(states).gather(1, actions.unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            target = rewards + self.gamma * (1 - dones) * self.target(next_states).max(1).values
        loss = F.smooth_l1_loss(q, target)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()

    def sync_target(self):
        self.target.load_state_dict(self.q_net.state_dict())


if __name__ == "__main__":
    random.seed(0)
    torch.manual_seed(0)
    env, agent = ChainEnv(), DQNAgent(8, 2)
    for episode in range(12):
        obs, steps, done = env.reset(), 0, False
        eps = max(0.05, 1.0 - episode / 10)
        while not done and steps < 30:
            a = agent.act(obs, eps)
            nxt, r, done = env.step(a)
            agent.buffer.push(obs, a, r, nxt, done)
            obs, steps = nxt, steps + 1
            if len(agent.buffer) >= agent.batch_size:
                agent.learn()
        if episode % 5 == 0:
            agent.sync_target()
    print("steps to goal in last episode:", steps)
