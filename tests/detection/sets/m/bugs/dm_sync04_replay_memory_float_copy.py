# source: https://github.com/Kaixhin/Rainbow/issues/48
# area: transfer & sync
# bug: sampled uint8 frame stacks are converted to float32 on the host as part of the device copy, so each batch moves four times the bytes over PCIe
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ReplayMemory:
    def __init__(self, capacity, history, frame_shape, device):
        self.capacity, self.history, self.device = capacity, history, device
        self.frames = torch.zeros((capacity,) + frame_shape, dtype=torch.uint8)
        self.actions = torch.zeros(capacity, dtype=torch.long)
        self.rewards = torch.zeros(capacity)
        self.dones = torch.zeros(capacity, dtype=torch.bool)
        self.pos, self.full = 0, False

    def append(self, frame, action, reward, done):
        self.frames[self.pos] = frame
        self.actions[self.pos] = action
        self.rewards[self.pos] = reward
        self.dones[self.pos] = done
        self.pos = (self.pos + 1) % self.capacity
        self.full = self.full or self.pos == 0

    def __len__(self):
        return self.capacity if self.full else self.pos

    def _stack(self, idx):
        offsets = torch.arange(-self.history + 1, 1)
        return self.frames[(idx.unsqueeze(1) + offsets) % self.capacity]

    def sample(self, batch_size):
        idx = torch.randint(self.history, len(self) - 1, (batch_size,))
        state = self._stack(idx).to(dtype=torch.float32, device=self.device).div_(255)  # expect[w]: any
        next_state = self._stack(idx + 1).to(dtype=torch.float32, device=self.device).div_(255)  # expect[w]: any
        action = self.actions[idx].to(self.device)
        reward = self.rewards[idx].to(self.device)
        done = self.dones[idx].to(self.device)
        return state, action, reward, next_state, done


class QNet(nn.Module):
    def __init__(self, history, n_actions):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(history, 16, 5, stride=3), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2), nn.ReLU(), nn.Flatten())
        self.fc = nn.Sequential(nn.LazyLinear(128), nn.ReLU(), nn.Linear(128, n_actions))

    def forward(self, x):
        return self.fc(self.conv(x))


class Agent:
    def __init__(self, history, n_actions, gamma=0.99):
        self.online = QNet(history, n_actions).to(device)
        self.online(torch.zeros(1, history, 42, 42, device=device))
        self.target = copy.deepcopy(self.online)
        self.optim = torch.optim.Adam(self.online.parameters(), lr=1e-4)
        self.gamma = gamma

    def learn(self, memory, batch_size):
        s, a, r, s2, d = memory.sample(batch_size)
        q = self.online(s).gather(1, a.unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            target = r + self.gamma * (~d).float() * self.target(s2).max(1).values
        loss = F.smooth_l1_loss(q, target)
        self.optim.zero_grad(set_to_none=True)
        loss.backward()
        self.optim.step()
        return loss.detach()


if __name__ == "__main__":
    torch.manual_seed(0)
    mem = ReplayMemory(2000, 4, (42, 42), device)
    for t in range(2000):
        mem.append(torch.randint(0, 256, (42, 42), dtype=torch.uint8),
                   t % 6, float(t % 7 == 0), t % 100 == 99)
    agent = Agent(history=4, n_actions=6)
    losses = []
    for step in range(40):
        losses.append(agent.learn(mem, 32))
        if step % 20 == 19:
            agent.target.load_state_dict(agent.online.state_dict())
    print("mean loss:", torch.stack(losses).mean().item())
