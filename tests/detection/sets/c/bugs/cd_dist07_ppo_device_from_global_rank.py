# source: https://github.com/huggingface/trl/pull/515
# area: porting & distributed
# bug: the trainer picks its GPU from the global rank, which exceeds the per-node GPU count on every node after the first ("invalid device ordinal")
import os
import socket
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


@dataclass
class PPOConfig:
    obs_dim: int = 8
    n_actions: int = 4
    batch_size: int = 64
    ppo_epochs: int = 4
    steps: int = 5
    clip: float = 0.2
    vf_coef: float = 0.5
    lr: float = 3e-4


def _get_current_device():
    if not torch.cuda.is_available():
        return torch.device("cpu")
    if dist.is_available() and dist.is_initialized():
        return torch.device("cuda", dist.get_rank())  # expect: any
    return torch.device("cuda", 0)


class PolicyWithValueHead(nn.Module):
    def __init__(self, obs_dim, n_actions, hidden=64):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.policy_head = nn.Linear(hidden, n_actions)
        self.value_head = nn.Linear(hidden, 1)

    def forward(self, obs):
        h = self.body(obs)
        return self.policy_head(h), self.value_head(h).squeeze(-1)


class PPOTrainer:
    def __init__(self, config):
        self.config = config
        self.device = _get_current_device()
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        model = PolicyWithValueHead(config.obs_dim, config.n_actions).to(self.device)
        self.model = DDP(model, device_ids=[self.device.index] if self.device.type == "cuda" else None)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.lr)

    def rollout(self):
        obs = torch.randn(self.config.batch_size, self.config.obs_dim, device=self.device)
        with torch.no_grad():
            logits, values = self.model(obs)
            dist_ = torch.distributions.Categorical(logits=logits)
            actions = dist_.sample()
            logprobs = dist_.log_prob(actions)
        rewards = (actions == obs[:, : self.config.n_actions].argmax(dim=1)).float()
        return obs, actions, logprobs, values, rewards

    def step(self):
        obs, actions, old_logprobs, old_values, rewards = self.rollout()
        advantages = rewards - old_values
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        for _ in range(self.config.ppo_epochs):
            logits, values = self.model(obs)
            logprobs = torch.distributions.Categorical(logits=logits).log_prob(actions)
            ratio = torch.exp(logprobs - old_logprobs)
            pg_loss = -torch.min(ratio * advantages,
                                 ratio.clamp(1 - self.config.clip, 1 + self.config.clip) * advantages).mean()
            vf_loss = F.mse_loss(values, rewards)
            loss = pg_loss + self.config.vf_coef * vf_loss
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
        return rewards.mean()


def main():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
                              MASTER_ADDR="127.0.0.1", MASTER_PORT=str(s.getsockname()[1]))
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    trainer = PPOTrainer(PPOConfig())
    mean_rewards = torch.stack([trainer.step() for _ in range(trainer.config.steps)])
    if dist.get_rank() == 0:
        print(f"mean reward per step: {[round(r, 3) for r in mean_rewards.tolist()]}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
