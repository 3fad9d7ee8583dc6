# source: https://github.com/pytorch/tensordict/issues/725
# area: transfer & sync
# bug: policy outputs are copied GPU->CPU with non_blocking=True and read as numpy right away with no synchronisation, so the host can see stale or garbage values
import numpy as np
import torch
import torch.nn as nn


class PointMassEnv:
    """Tiny vectorised numpy environment: push a point towards the origin."""

    def __init__(self, num_envs=8, seed=0):
        self.rng = np.random.default_rng(seed)
        self.num_envs = num_envs
        self.state = self.rng.normal(size=(num_envs, 2)).astype(np.float32)

    def step(self, action):
        self.state = np.clip(self.state + 0.1 * action, -3.0, 3.0)
        reward = -np.linalg.norm(self.state, axis=1)
        return self.state.copy(), reward.astype(np.float32)


class GaussianPolicy(nn.Module):
    def __init__(self, obs_dim=2, act_dim=2, hidden=32):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.mu = nn.Linear(hidden, act_dim)
        self.log_std = nn.Parameter(torch.zeros(act_dim))

    def forward(self, obs):
        h = self.body(obs)
        dist = torch.distributions.Normal(self.mu(h), self.log_std.exp())
        action = dist.sample()
        return {"action": action, "log_prob": dist.log_prob(action).sum(-1)}


def to_host(out):
    return {k: v.detach().to("cpu", non_blocking=True) for k, v in out.items()}  # expect: any


def collect_rollout(env, policy, device, horizon=32):
    obs = env.state.copy()
    buffer = {"obs": [], "action": [], "log_prob": [], "reward": []}
    for _ in range(horizon):
        obs_t = torch.from_numpy(obs).to(device)
        with torch.no_grad():
            out = to_host(policy(obs_t))
        action_np = out["action"].numpy()
        next_obs, reward = env.step(action_np)
        buffer["obs"].append(obs)
        buffer["action"].append(action_np)
        buffer["log_prob"].append(out["log_prob"].numpy())
        buffer["reward"].append(reward)
        obs = next_obs
    return {k: np.stack(v) for k, v in buffer.items()}


def discounted_returns(rewards, gamma=0.99):
    returns = np.zeros_like(rewards)
    running = np.zeros(rewards.shape[1], dtype=rewards.dtype)
    for t in reversed(range(rewards.shape[0])):
        running = rewards[t] + gamma * running
        returns[t] = running
    return returns


def reinforce_update(policy, optimizer, batch, device):
    obs = torch.from_numpy(batch["obs"]).to(device)
    actions = torch.from_numpy(batch["action"]).to(device)
    ret = torch.from_numpy(discounted_returns(batch["reward"])).to(device)
    ret = (ret - ret.mean()) / (ret.std() + 1e-6)
    h = policy.body(obs)
    dist = torch.distributions.Normal(policy.mu(h), policy.log_std.exp())
    loss = -(dist.log_prob(actions).sum(-1) * ret).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.detach()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    env = PointMassEnv()
    policy = GaussianPolicy().to(device)
    optimizer = torch.optim.Adam(policy.parameters(), lr=3e-3)
    for it in range(5):
        batch = collect_rollout(env, policy, device)
        loss = reinforce_update(policy, optimizer, batch, device)
        print(f"iter {it}: mean reward {batch['reward'].mean():.3f} loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
