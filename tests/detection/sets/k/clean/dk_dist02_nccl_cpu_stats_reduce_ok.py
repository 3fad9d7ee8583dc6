# twin of: bugs/dk_dist02_nccl_cpu_stats_reduce.py
# area: porting & distributed
# correct: the tensors handed to all_reduce are created on this rank's device, so NCCL (or gloo on CPU) accepts them
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class PPOConfig:
    obs_dim = 8
    n_actions = 4
    rollout_len = 64
    ppo_epochs = 3
    clip_range = 0.2
    lr = 3e-4
    iterations = 3


class ActorCritic(nn.Module):
    def __init__(self, obs_dim, n_actions):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh())
        self.pi = nn.Linear(64, n_actions)
        self.v = nn.Linear(64, 1)

    def forward(self, obs):
        h = self.body(obs)
        return self.pi(h), self.v(h).squeeze(-1)


def init_dist():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
        os.environ.update(MASTER_ADDR="127.0.0.1", RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return device


def gather_stats(stats, device):
    keys = list(stats)
    packed = torch.tensor([stats[k] for k in keys], dtype=torch.float32, device=device)
    dist.all_reduce(packed, op=dist.ReduceOp.SUM)
    packed /= dist.get_world_size()
    return dict(zip(keys, packed.tolist()))


def collect_rollout(policy, cfg, device, gen):
    obs = torch.randn(cfg.rollout_len, cfg.obs_dim, device=device, generator=gen)
    with torch.no_grad():
        logits, values = policy(obs)
        dist_ = torch.distributions.Categorical(logits=logits)
        actions = dist_.sample()
        logp = dist_.log_prob(actions)
    rewards = (actions == 0).float() - 0.1 * obs[:, 0].abs()
    adv = rewards - values
    return obs, actions, logp, rewards, (adv - adv.mean()) / (adv.std() + 1e-8)


def ppo_step(policy, optimizer, batch, cfg):
    obs, actions, old_logp, rewards, adv = batch
    for _ in range(cfg.ppo_epochs):
        logits, values = policy(obs)
        logp = torch.distributions.Categorical(logits=logits).log_prob(actions)
        ratio = (logp - old_logp).exp()
        clipped = ratio.clamp(1 - cfg.clip_range, 1 + cfg.clip_range)
        pg_loss = -torch.min(ratio * adv, clipped * adv).mean()
        vf_loss = (values - rewards).pow(2).mean()
        optimizer.zero_grad()
        (pg_loss + 0.5 * vf_loss).backward()
        optimizer.step()
    return torch.stack([pg_loss.detach(), vf_loss.detach(), rewards.mean()])


def main():
    cfg = PPOConfig()
    device = init_dist()
    gen = torch.Generator(device=device).manual_seed(1234 + dist.get_rank())
    policy = DDP(ActorCritic(cfg.obs_dim, cfg.n_actions).to(device))
    optimizer = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
    for it in range(cfg.iterations):
        batch = collect_rollout(policy, cfg, device, gen)
        pg, vf, rew = ppo_step(policy, optimizer, batch, cfg).tolist()
        stats = {"ppo/policy_loss": pg, "ppo/value_loss": vf, "env/reward_mean": rew}
        stats = gather_stats(stats, device)
        if dist.get_rank() == 0:
            print(it, {k: round(v, 4) for k, v in stats.items()})
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
