# source: https://github.com/RoboVerseOrg/RoboVerse/issues/69
# area: transfer & sync
# bug: the GPU-batched simulator's observation and reward helpers copy state to NumPy on every env step, so each rollout step syncs and round-trips through host memory
import numpy as np
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

OBS_KEYS = ("root_pos", "root_vel", "joint_pos", "joint_vel")


class BatchedHumanoidSim:
    def __init__(self, num_envs, num_joints=12):
        self.num_envs = num_envs
        self.num_joints = num_joints
        self.state = {
            "root_pos": torch.zeros(num_envs, 3, device=device),
            "root_vel": torch.zeros(num_envs, 3, device=device),
            "joint_pos": torch.zeros(num_envs, num_joints, device=device),
            "joint_vel": torch.zeros(num_envs, num_joints, device=device),
        }
        self.state["root_pos"][:, 2] = 1.0

    def physics_step(self, actions, dt=0.02):
        s = self.state
        s["joint_vel"] = 0.9 * s["joint_vel"] + dt * actions
        s["joint_pos"] = s["joint_pos"] + dt * s["joint_vel"]
        push = s["joint_vel"].mean(dim=1, keepdim=True)
        s["root_vel"] = s["root_vel"] * 0.95 + dt * torch.cat([push, push * 0.1, -0.1 * push.abs()], 1)
        s["root_pos"] = s["root_pos"] + dt * s["root_vel"]


def flatten_obs(state):
    parts = [state[k].cpu().numpy() for k in OBS_KEYS]  # expect[h]: any
    return np.concatenate(parts, axis=1).astype(np.float32)


def locomotion_reward(state, target_height=1.0):
    root = torch.cat([state["root_pos"], state["root_vel"]], dim=1).cpu().numpy()  # expect[h]: any
    height, forward = root[:, 2], root[:, 3]
    upright = np.exp(-4.0 * (height - target_height) ** 2)
    return (forward + 0.5 * upright).astype(np.float32)


class SimEnvWrapper:
    def __init__(self, sim):
        self.sim = sim

    def step(self, actions):
        self.sim.physics_step(actions)
        obs = flatten_obs(self.sim.state)
        rew = locomotion_reward(self.sim.state)
        return obs, rew


class Policy(nn.Module):
    def __init__(self, obs_dim, act_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, act_dim))

    def forward(self, obs):
        return torch.tanh(self.net(obs))


@torch.no_grad()
def rollout(env, policy, horizon):
    obs = flatten_obs(env.sim.state)
    returns = torch.zeros(env.sim.num_envs, device=device)
    for _ in range(horizon):
        obs_t = torch.as_tensor(obs, device=device)  # expect[h]: any
        actions = policy(obs_t)
        obs, rew = env.step(actions)
        returns += torch.as_tensor(rew, device=device)
    return returns


def main():
    torch.manual_seed(0)
    sim = BatchedHumanoidSim(num_envs=256)
    env = SimEnvWrapper(sim)
    obs_dim = 3 + 3 + 2 * sim.num_joints
    policy = Policy(obs_dim, sim.num_joints).to(device)
    returns = rollout(env, policy, horizon=64)
    print(f"mean return {returns.mean().item():.3f}")


if __name__ == "__main__":
    main()
