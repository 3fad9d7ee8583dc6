# source: https://github.com/thu-ml/tianshou/pull/1237
# area: dtype
# bug: replay-buffer arrays are NumPy float64 and are moved to the accelerator before being cast, so on MPS the transfer fails ("MPS framework doesn't support float64") and on CUDA every batch ships and converts doubles
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def pick_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def to_torch(x, device):
    t = torch.as_tensor(x, device=device)  # expect: any
    return t.float() if t.is_floating_point() else t


class ReplayBuffer:
    def __init__(self, capacity, obs_dim, seed=0):
        self.obs = np.zeros((capacity, obs_dim))
        self.next_obs = np.zeros((capacity, obs_dim))
        self.act = np.zeros(capacity, dtype=np.int64)
        self.rew = np.zeros(capacity)
        self.done = np.zeros(capacity)
        self.capacity, self.size, self.ptr = capacity, 0, 0
        self.rng = np.random.default_rng(seed)

    def add(self, o, a, r, o2, d):
        i = self.ptr
        self.obs[i], self.act[i], self.rew[i], self.next_obs[i], self.done[i] = o, a, r, o2, d
        self.ptr = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch_size, device):
        idx = self.rng.integers(0, self.size, size=batch_size)
        fields = (self.obs, self.act, self.rew, self.next_obs, self.done)
        return [to_torch(f[idx], device) for f in fields]


class ToyChainEnv:
    def __init__(self, n=6, seed=0):
        self.n, self.rng = n, np.random.default_rng(seed)

    def reset(self):
        self.pos = 0
        return self._obs()

    def _obs(self):
        o = np.zeros(self.n)
        o[self.pos] = 1.0
        return o

    def step(self, a):
        self.pos = max(0, min(self.n - 1, self.pos + (1 if a == 1 else -1)))
        done = self.pos == self.n - 1
        return self._obs(), float(done), done


class QNet(nn.Module):
    def __init__(self, obs_dim, n_actions, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, hidden), nn.ReLU(), nn.Linear(hidden, n_actions))

    def forward(self, x):
        return self.net(x)


def collect(env, buf, n_steps, seed=1):
    rng = np.random.default_rng(seed)
    obs, episodes = env.reset(), 0
    for _ in range(n_steps):
        act = int(rng.integers(2))
        nxt, rew, done = env.step(act)
        buf.add(obs, act, rew, nxt, float(done))
        obs = env.reset() if done else nxt
        episodes += int(done)
    return episodes


def train_offline(updates=200, batch_size=32, gamma=0.95):
    device = pick_device()
    torch.manual_seed(0)
    env, buf = ToyChainEnv(), ReplayBuffer(2000, 6)
    episodes = collect(env, buf, 800)
    q, q_targ = QNet(6, 2).to(device), QNet(6, 2).to(device)
    q_targ.load_state_dict(q.state_dict())
    opt = torch.optim.Adam(q.parameters(), lr=1e-3)
    running = torch.zeros((), device=device)
    for step in range(updates):
        o, a, r, o2, d = buf.sample(batch_size, device)
        with torch.no_grad():
            target = r + gamma * (1 - d) * q_targ(o2).max(dim=1).values
        pred = q(o).gather(1, a[:, None]).squeeze(1)
        loss = F.smooth_l1_loss(pred, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running += loss.detach()
        if (step + 1) % 50 == 0:
            q_targ.load_state_dict(q.state_dict())
    with torch.no_grad():
        states = to_torch(np.eye(6), device)
        greedy = q(states).argmax(dim=1).cpu().tolist()
    print(f"device={device.type} logged episodes={episodes} mean loss={running.item() / updates:.4f}")
    print("greedy actions per state:", greedy)


if __name__ == "__main__":
    train_offline()
