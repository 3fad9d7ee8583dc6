# source: https://github.com/ray-project/ray/issues/60363
# area: device placement
# bug: the epsilon-greedy coin flips come from torch.rand((B,)) with no device, so the CPU mask meets GPU action tensors in torch.where when the module runs on the GPU
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class ChainEnv:
    """Vectorised toy chain: move left/right/stay, reward at the right end."""

    def __init__(self, num_envs, length=8, seed=0):
        self.num_envs, self.length = num_envs, length
        self.rng = np.random.default_rng(seed)
        self.pos = np.zeros(num_envs, dtype=np.int64)

    def observe(self):
        obs = np.zeros((self.num_envs, self.length), dtype=np.float32)
        obs[np.arange(self.num_envs), self.pos] = 1.0
        return obs

    def reset(self):
        self.pos[:] = self.rng.integers(0, self.length // 2, self.num_envs)
        return self.observe()

    def step(self, actions):
        self.pos = np.clip(self.pos + (actions - 1), 0, self.length - 1)
        done = self.pos == self.length - 1
        reward = done.astype(np.float32)
        self.pos[done] = 0
        return self.observe(), reward, done


class DQNModule(nn.Module):
    def __init__(self, obs_dim, num_actions, hidden=64):
        super().__init__()
        self.num_actions = num_actions
        self.q_net = nn.Sequential(nn.Linear(obs_dim, hidden), nn.ReLU(), nn.Linear(hidden, num_actions))

    def forward_inference(self, obs):
        return self.q_net(obs).argmax(dim=-1)

    def forward_exploration(self, obs, epsilon):
        q_values = self.q_net(obs)
        greedy_actions = q_values.argmax(dim=-1)
        B = q_values.shape[0]
        random_actions = torch.randint(0, self.num_actions, (B,), device=q_values.device)
        explore = torch.rand((B,)) < epsilon  # expect: any
        return torch.where(explore, random_actions, greedy_actions)


class ReplayBuffer:
    def __init__(self, capacity, obs_dim, device):
        self.device = device
        self.obs = torch.zeros(capacity, obs_dim, device=device)
        self.next_obs = torch.zeros(capacity, obs_dim, device=device)
        self.actions = torch.zeros(capacity, dtype=torch.long, device=device)
        self.rewards = torch.zeros(capacity, device=device)
        self.dones = torch.zeros(capacity, device=device)
        self.capacity, self.ptr, self.size = capacity, 0, 0

    def add(self, obs, actions, rewards, next_obs, dones):
        n = obs.shape[0]
        idx = (torch.arange(n, device=self.device) + self.ptr) % self.capacity
        self.obs[idx], self.next_obs[idx], self.actions[idx] = obs, next_obs, actions
        self.rewards[idx], self.dones[idx] = rewards, dones
        self.ptr = (self.ptr + n) % self.capacity
        self.size = min(self.size + n, self.capacity)

    def sample(self, batch_size):
        idx = torch.randint(0, self.size, (batch_size,), device=self.device)
        return self.obs[idx], self.actions[idx], self.rewards[idx], self.next_obs[idx], self.dones[idx]


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    env = ChainEnv(num_envs=16)
    module = DQNModule(env.length, 3).to(device)
    target = DQNModule(env.length, 3).to(device)
    target.load_state_dict(module.state_dict())
    optim = torch.optim.Adam(module.parameters(), lr=1e-3)
    buffer = ReplayBuffer(4096, env.length, device)
    obs = torch.from_numpy(env.reset()).to(device)
    for it in range(120):
        epsilon = max(0.05, 1.0 - it / 90)
        with torch.no_grad():
            actions = module.forward_exploration(obs, epsilon)
        next_np, rew_np, done_np = env.step(actions.cpu().numpy())
        next_obs = torch.from_numpy(next_np).to(device)
        buffer.add(obs, actions, torch.from_numpy(rew_np).to(device), next_obs,
                   torch.from_numpy(done_np.astype(np.float32)).to(device))
        obs = next_obs
        if buffer.size >= 256:
            o, a, r, o2, d = buffer.sample(64)
            with torch.no_grad():
                target_q = r + 0.95 * (1 - d) * target.q_net(o2).amax(-1)
            q = module.q_net(o).gather(1, a[:, None]).squeeze(1)
            loss = F.smooth_l1_loss(q, target_q)
            optim.zero_grad()
            loss.backward()
            optim.step()
        if it % 40 == 0:
            target.load_state_dict(module.state_dict())
    greedy = module.forward_inference(torch.from_numpy(env.reset()).to(device))
    print("greedy actions", greedy.tolist())


if __name__ == "__main__":
    main()
