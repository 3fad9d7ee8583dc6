# source: https://github.com/facebookresearch/habitat-sim/pull/193
# area: porting & distributed
# bug: the current CUDA device is never set to LOCAL_RANK, so the bare .cuda() in reduce_stats puts every rank's buffer on cuda:0 (NCCL device mismatch, extra contexts on GPU 0)
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_distrib():
    if "RANK" not in os.environ:
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend=backend)
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        device = torch.device("cuda", local_rank)  # expect[w]: any
    else:
        device = torch.device("cpu")
    return local_rank, device


class PointNavPolicy(nn.Module):
    def __init__(self, obs_dim=24, n_actions=4, hidden=64):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.actor = nn.Linear(hidden, n_actions)
        self.critic = nn.Linear(hidden, 1)

    def forward(self, obs):
        h = self.body(obs)
        return torch.distributions.Categorical(logits=self.actor(h)), self.critic(h).squeeze(-1)


class ToyVecEnv:
    """Batched goal-reaching environment that lives on the training device."""

    def __init__(self, n_envs, obs_dim, device):
        self.n, self.obs_dim, self.device = n_envs, obs_dim, device
        self.goal = torch.randn(n_envs, obs_dim, device=device)

    def reset(self):
        return torch.randn(self.n, self.obs_dim, device=self.device)

    def step(self, obs, action):
        shift = torch.nn.functional.one_hot(action, self.obs_dim).float() * 0.1
        nxt = obs + shift
        reward = -(nxt - self.goal).pow(2).mean(-1)
        return nxt, reward


def reduce_stats(stats):
    keys = sorted(stats)
    buf = torch.tensor([float(stats[k]) for k in keys], dtype=torch.float64)
    if torch.cuda.is_available():
        buf = buf.cuda()  # expect[w]: any
    dist.all_reduce(buf)
    buf /= dist.get_world_size()
    return dict(zip(keys, buf.tolist()))


def train(num_updates=6, rollout_len=16, n_envs=32, obs_dim=24):
    local_rank, device = init_distrib()
    torch.manual_seed(local_rank)
    policy = PointNavPolicy(obs_dim).to(device)
    ddp_policy = DDP(policy, device_ids=[local_rank] if device.type == "cuda" else None)
    optim = torch.optim.Adam(ddp_policy.parameters(), lr=3e-4)
    env = ToyVecEnv(n_envs, obs_dim, device)

    for update in range(num_updates):
        obs = env.reset()
        log_probs, values, rewards = [], [], []
        for _ in range(rollout_len):
            dist_a, value = ddp_policy(obs)
            action = dist_a.sample()
            obs, reward = env.step(obs, action)
            log_probs.append(dist_a.log_prob(action))
            values.append(value)
            rewards.append(reward)
        rewards = torch.stack(rewards)
        returns = rewards.flip(0).cumsum(0).flip(0)
        adv = returns - torch.stack(values).detach()
        loss = -(torch.stack(log_probs) * adv).mean() + 0.5 * (torch.stack(values) - returns).pow(2).mean()
        optim.zero_grad()
        loss.backward()
        optim.step()

        summary = torch.stack([rewards.mean(), loss.detach()]).tolist()
        stats = reduce_stats({"reward": summary[0], "loss": summary[1]})
        if dist.get_rank() == 0:
            print(f"update {update}: reward={stats['reward']:.3f} loss={stats['loss']:.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    train()
