# source: https://github.com/motornet-org/MotorNet/pull/15
# area: device placement
# bug: Module.to() reaches children through _apply, so the hand-tracked _device of the nested Effector stays 'cpu' and reset() builds its state on the CPU next to GPU buffers
import torch
import torch.nn as nn


def _device_from_to_args(args, kwargs, fallback):
    candidate = kwargs.get("device", args[0] if args else None)
    if isinstance(candidate, (str, torch.device)):
        return torch.device(candidate)
    return fallback


class Effector(nn.Module):
    def __init__(self, n_muscles=4, dt=0.01):
        super().__init__()
        self.n_muscles = n_muscles
        self.dt = dt
        self.register_buffer("max_force", torch.linspace(200.0, 500.0, n_muscles))
        self.register_buffer("moment_arm", torch.tensor([[0.05, -0.05, 0.03, -0.03],
                                                         [0.02, -0.02, 0.04, -0.04]]))
        self._device = torch.device("cpu")

    def to(self, *args, **kwargs):
        self._device = _device_from_to_args(args, kwargs, self._device)
        return super().to(*args, **kwargs)

    @property
    def device(self):
        return self._device

    def reset(self, batch_size):
        joints = torch.zeros(batch_size, 4, device=self.device)  # expect[w]: any
        activation = torch.full((batch_size, self.n_muscles), 0.01, device=self.device)  # expect[w]: any
        return joints, activation

    def step(self, joints, activation, command):
        activation = activation + self.dt / 0.05 * (command - activation)
        torque = (activation * self.max_force) @ self.moment_arm.t()
        pos, vel = joints[:, :2], joints[:, 2:]
        vel = vel + self.dt * (torque - 0.5 * vel)
        pos = pos + self.dt * vel
        return torch.cat([pos, vel], dim=-1), activation


class ReachEnv(nn.Module):
    def __init__(self, effector):
        super().__init__()
        self.effector = effector
        self._device = torch.device("cpu")

    def to(self, *args, **kwargs):
        self._device = _device_from_to_args(args, kwargs, self._device)
        return super().to(*args, **kwargs)

    def reset(self, goals):
        self.goals = goals
        return self.effector.reset(goals.size(0))

    def observe(self, joints):
        return torch.cat([joints, self.goals], dim=-1)


class Policy(nn.Module):
    def __init__(self, obs_dim=6, hidden=64, n_muscles=4):
        super().__init__()
        self.gru = nn.GRUCell(obs_dim, hidden)
        self.out = nn.Linear(hidden, n_muscles)

    def forward(self, obs, h):
        h = self.gru(obs, h)
        return torch.sigmoid(self.out(h)), h


def rollout(env, policy, goals, horizon):
    joints, activation = env.reset(goals)
    h = goals.new_zeros(goals.size(0), policy.gru.hidden_size)
    loss = goals.new_zeros(())
    for _ in range(horizon):
        command, h = policy(env.observe(joints), h)
        joints, activation = env.effector.step(joints, activation, command)
        loss = loss + ((joints[:, :2] - env.goals) ** 2).sum(-1).mean() + 1e-3 * command.pow(2).mean()
    return loss / horizon


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    env = ReachEnv(Effector()).to(device)
    policy = Policy().to(device)
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
    losses = []
    for it in range(8):
        goals = (torch.rand(32, 2, device=device) - 0.5) * 0.2
        loss = rollout(env, policy, goals, horizon=15)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    print("final loss", torch.stack(losses)[-3:].mean().item())


if __name__ == "__main__":
    main()
