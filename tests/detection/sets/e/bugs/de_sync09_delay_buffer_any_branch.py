# source: https://github.com/mujocolab/mjlab/pull/1031
# area: transfer & sync
# bug: the ring buffer branches in Python on a GPU tensor (.any()) at every env step to skip a fill, which forces a device->host sync per step
import torch
import torch.nn as nn


class CircularHistory:
    """Per-environment ring buffer of recent actions, stored on the sim device."""

    def __init__(self, max_len, num_envs, dim, device):
        self.max_len = max_len
        self.device = device
        self.buffer = torch.zeros(max_len, num_envs, dim, device=device)
        self.pointer = -1
        self.num_pushes = torch.zeros(num_envs, dtype=torch.long, device=device)

    def reset(self, done_mask):
        self.num_pushes.masked_fill_(done_mask, 0)
        self.buffer.masked_fill_(done_mask.view(1, -1, 1), 0.0)

    def append(self, data):
        self.pointer = (self.pointer + 1) % self.max_len
        self.buffer[self.pointer] = data
        fresh = self.num_pushes == 0
        if fresh.any():  # expect: any
            self.buffer[:, fresh] = data[fresh].unsqueeze(0)
        self.num_pushes += 1

    def __getitem__(self, lag):
        lag = torch.minimum(lag, self.num_pushes - 1).clamp(min=0)
        idx = (self.pointer - lag) % self.max_len
        env = torch.arange(self.buffer.size(1), device=self.device)
        return self.buffer[idx, env]


class DelayedActuator:
    def __init__(self, num_envs, num_joints, max_delay, device):
        self.history = CircularHistory(max_delay + 1, num_envs, num_joints, device)
        self.delay = torch.randint(0, max_delay + 1, (num_envs,), device=device)
        self.kp, self.kd = 20.0, 0.5

    def compute(self, target, q, qd):
        self.history.append(target)
        delayed = self.history[self.delay]
        return self.kp * (delayed - q) - self.kd * qd


class VecJointEnv:
    def __init__(self, num_envs=256, num_joints=12, max_delay=3, device="cpu"):
        self.device = torch.device(device)
        self.q = torch.zeros(num_envs, num_joints, device=self.device)
        self.qd = torch.zeros_like(self.q)
        self.actuator = DelayedActuator(num_envs, num_joints, max_delay, self.device)
        self.step_count = torch.zeros(num_envs, dtype=torch.long, device=self.device)
        self.dt = 0.01

    def step(self, action):
        torque = self.actuator.compute(action, self.q, self.qd)
        self.qd = self.qd + self.dt * torque
        self.q = self.q + self.dt * self.qd
        self.step_count += 1
        reward = -(self.q - action).square().mean(dim=1)
        done = self.step_count >= 100
        self.step_count.masked_fill_(done, 0)
        self.actuator.history.reset(done)
        return torch.cat([self.q, self.qd], dim=1), reward


def rollout(device, steps=300):
    env = VecJointEnv(device=device)
    policy = nn.Sequential(nn.Linear(24, 64), nn.Tanh(), nn.Linear(64, 12)).to(device)
    obs = torch.zeros(256, 24, device=device)
    total = torch.zeros((), device=device)
    with torch.no_grad():
        for _ in range(steps):
            action = policy(obs)
            obs, reward = env.step(action)
            total += reward.mean()
    print(f"mean reward per step: {(total / steps).item():.5f}")


if __name__ == "__main__":
    rollout(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
