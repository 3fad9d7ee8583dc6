# source: https://github.com/Linesight-RL/linesight/issues/51
# area: AMP
# bug: the learner builds its loss scaler with the deprecated torch.cuda.amp.GradScaler instead of torch.amp.GradScaler(device.type, ...)
import copy
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass


@dataclass
class LearnerConfig:
    obs_dim: int = 16
    n_actions: int = 5
    n_envs: int = 32
    buffer_size: int = 4096
    batch_size: int = 128
    gamma: float = 0.99
    lr: float = 5e-4
    target_sync_every: int = 50
    use_amp: bool = True


class QNetwork(nn.Module):
    def __init__(self, obs_dim, n_actions):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU())
        self.value = nn.Linear(128, 1)
        self.adv = nn.Linear(128, n_actions)

    def forward(self, obs):
        h = self.body(obs)
        adv = self.adv(h)
        return self.value(h) + adv - adv.mean(dim=1, keepdim=True)


class DeviceReplayBuffer:
    def __init__(self, cfg, device):
        self.cap = cfg.buffer_size
        self.obs = torch.zeros(self.cap, cfg.obs_dim, device=device)
        self.next_obs = torch.zeros_like(self.obs)
        self.act = torch.zeros(self.cap, dtype=torch.long, device=device)
        self.rew = torch.zeros(self.cap, device=device)
        self.done = torch.zeros(self.cap, device=device)
        self.ptr, self.size = 0, 0

    def add(self, obs, act, rew, next_obs, done):
        n = obs.shape[0]
        idx = (torch.arange(n, device=obs.device) + self.ptr) % self.cap
        self.obs[idx], self.act[idx], self.rew[idx] = obs, act, rew
        self.next_obs[idx], self.done[idx] = next_obs, done
        self.ptr = (self.ptr + n) % self.cap
        self.size = min(self.size + n, self.cap)

    def sample(self, batch_size):
        idx = torch.randint(0, self.size, (batch_size,), device=self.obs.device)
        return self.obs[idx], self.act[idx], self.rew[idx], self.next_obs[idx], self.done[idx]


class Learner:
    def __init__(self, cfg: LearnerConfig, device):
        self.cfg, self.device = cfg, device
        self.online = QNetwork(cfg.obs_dim, cfg.n_actions).to(device)
        self.target = copy.deepcopy(self.online).requires_grad_(False)
        self.opt = torch.optim.Adam(self.online.parameters(), lr=cfg.lr)
        self.use_amp = cfg.use_amp and device.type == "cuda"
        self.scaler = torch.cuda.amp.GradScaler(enabled=self.use_amp)  # expect: any
        self.updates = 0

    def train_step(self, batch):
        obs, act, rew, next_obs, done = batch
        with torch.autocast(self.device.type, dtype=torch.float16, enabled=self.use_amp):
            q = self.online(obs).gather(1, act.unsqueeze(1)).squeeze(1)
            with torch.no_grad():
                next_a = self.online(next_obs).argmax(dim=1, keepdim=True)
                next_q = self.target(next_obs).gather(1, next_a).squeeze(1)
                target = rew + self.cfg.gamma * (1.0 - done) * next_q.float()
            loss = F.smooth_l1_loss(q.float(), target)
        self.opt.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.opt)
        nn.utils.clip_grad_norm_(self.online.parameters(), 10.0)
        self.scaler.step(self.opt)
        self.scaler.update()
        self.updates += 1
        if self.updates % self.cfg.target_sync_every == 0:
            self.target.load_state_dict(self.online.state_dict())
        return loss.detach()


def run(device, iterations=120):
    cfg = LearnerConfig()
    learner, buffer = Learner(cfg, device), DeviceReplayBuffer(cfg, device)
    obs = torch.randn(cfg.n_envs, cfg.obs_dim, device=device)
    losses = torch.zeros(iterations, device=device)
    for it in range(iterations):
        with torch.no_grad():
            greedy = learner.online(obs).argmax(dim=1)
        explore = torch.rand(cfg.n_envs, device=device) < 0.1
        act = torch.where(explore, torch.randint_like(greedy, cfg.n_actions), greedy)
        next_obs = obs.roll(1, dims=1) + 0.1 * torch.randn_like(obs)
        rew = (act == (obs[:, 0] > 0).long()).float()
        done = (torch.rand(cfg.n_envs, device=device) < 0.02).float()
        buffer.add(obs, act, rew, next_obs, done)
        obs = torch.where(done.bool().unsqueeze(1), torch.randn_like(obs), next_obs)
        if it >= 10:
            losses[it] = learner.train_step(buffer.sample(cfg.batch_size))
    print(f"mean TD loss over last 50 updates: {losses[-50:].mean().item():.4f}")


if __name__ == "__main__":
    run(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
