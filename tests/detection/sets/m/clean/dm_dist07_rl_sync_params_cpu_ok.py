# twin of: bugs/dm_dist07_rl_sync_params_cpu.py
# area: porting & distributed
# correct: the policy is moved to its GPU before the initial broadcast, so NCCL receives CUDA tensors and every rank starts from rank 0's weights
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributions import Categorical


def init_distributed():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
        return torch.device("cuda", local_rank)
    dist.init_process_group("gloo")
    return torch.device("cpu")


def sync_params(module):
    for p in module.parameters():
        dist.broadcast(p.data, src=0)


def average_gradients(module):
    world = dist.get_world_size()
    for p in module.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad.div_(world)


class ActorCritic(nn.Module):
    def __init__(self, obs_dim=2, n_actions=4, hidden=64):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, n_actions)
        self.v = nn.Linear(hidden, 1)

    def forward(self, obs):
        h = self.body(obs)
        return Categorical(logits=self.pi(h), validate_args=False), self.v(h).squeeze(-1)


class PointEnv:
    MOVES = torch.tensor([[0.1, 0.0], [-0.1, 0.0], [0.0, 0.1], [0.0, -0.1]])

    def __init__(self, num_envs, device):
        self.moves = self.MOVES.to(device)
        self.pos = torch.rand(num_envs, 2, device=device) * 2 - 1

    def step(self, actions):
        self.pos = (self.pos + self.moves[actions]).clamp(-1, 1)
        return self.pos.clone(), -self.pos.norm(dim=1)


def collect(ac, env, horizon):
    bufs = obs_buf, act_buf, logp_buf, rew_buf, val_buf = [], [], [], [], []
    obs = env.pos.clone()
    with torch.no_grad():
        for _ in range(horizon):
            dist_pi, value = ac(obs)
            action = dist_pi.sample()
            next_obs, reward = env.step(action)
            for buf, item in zip(bufs, (obs, action, dist_pi.log_prob(action), reward, value)):
                buf.append(item)
            obs = next_obs
    rews, vals = torch.stack(rew_buf), torch.stack(val_buf)
    returns = torch.zeros_like(rews)
    running = torch.zeros_like(rews[0])
    for t in reversed(range(horizon)):
        running = rews[t] + 0.95 * running
        returns[t] = running
    adv = returns - vals
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    batch = (torch.cat(obs_buf), torch.cat(act_buf), torch.cat(logp_buf), returns.flatten(), adv.flatten())
    return batch, rews.mean()


def ppo_update(ac, optimizer, batch, clip=0.2, epochs=4):
    obs, act, logp_old, ret, adv = batch
    for _ in range(epochs):
        dist_pi, value = ac(obs)
        ratio = torch.exp(dist_pi.log_prob(act) - logp_old)
        pi_loss = -torch.min(ratio * adv, ratio.clamp(1 - clip, 1 + clip) * adv).mean()
        loss = pi_loss + 0.5 * (value - ret).pow(2).mean() - 0.01 * dist_pi.entropy().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        average_gradients(ac)
        optimizer.step()


def main():
    device = init_distributed()
    torch.manual_seed(1234 + dist.get_rank())
    ac = ActorCritic().to(device)
    sync_params(ac)
    optimizer = torch.optim.Adam(ac.parameters(), lr=3e-3)
    env = PointEnv(num_envs=32, device=device)
    for epoch in range(5):
        batch, mean_reward = collect(ac, env, horizon=32)
        ppo_update(ac, optimizer, batch)
        if dist.get_rank() == 0:
            print(f"epoch {epoch}: mean reward {mean_reward.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
