# source: https://github.com/DLR-RM/stable-baselines3/issues/1149
# area: transfer & sync
# bug: the rollout buffer keeps NumPy arrays and copies every minibatch host->GPU inside the epoch loop, so the same rollout is re-uploaded n_epochs times per update
import copy

import numpy as np
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class RolloutBuffer:
    def __init__(self, n_steps, n_envs, obs_dim, device):
        self.n_steps, self.n_envs, self.device = n_steps, n_envs, device
        self.obs = np.zeros((n_steps, n_envs, obs_dim), dtype=np.float32)
        self.actions = np.zeros((n_steps, n_envs), dtype=np.int64)
        self.log_probs = np.zeros((n_steps, n_envs), dtype=np.float32)
        self.advantages = np.zeros((n_steps, n_envs), dtype=np.float32)
        self.pos = 0

    def add(self, obs, action, log_prob, adv):
        self.obs[self.pos], self.actions[self.pos] = obs, action
        self.log_probs[self.pos], self.advantages[self.pos] = log_prob, adv
        self.pos += 1

    def finalize(self):
        n = self.n_steps * self.n_envs
        self.flat = {k: getattr(self, k).reshape(n, *getattr(self, k).shape[2:])
                     for k in ("obs", "actions", "log_probs", "advantages")}

    def to_torch(self, array):
        return torch.as_tensor(array).to(self.device)  # expect: any

    def get(self, batch_size):
        n = self.n_steps * self.n_envs
        perm = np.random.permutation(n)
        for start in range(0, n, batch_size):
            yield self._get_samples(perm[start:start + batch_size])

    def _get_samples(self, idx):
        return {k: self.to_torch(v[idx]) for k, v in self.flat.items()}


class ActorNet(nn.Module):
    def __init__(self, obs_dim, n_actions):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, n_actions))

    def forward(self, obs):
        return torch.distributions.Categorical(logits=self.net(obs))


@torch.no_grad()
def collect(actor_cpu, buffer, obs_dim, rng):
    obs = rng.standard_normal((buffer.n_envs, obs_dim)).astype(np.float32)
    for _ in range(buffer.n_steps):
        dist = actor_cpu(torch.from_numpy(obs))
        action = dist.sample()
        adv = rng.standard_normal(buffer.n_envs).astype(np.float32)
        buffer.add(obs, action.numpy(), dist.log_prob(action).numpy(), adv)
        obs = (0.9 * obs + 0.1 * rng.standard_normal(obs.shape)).astype(np.float32)
    buffer.finalize()


def ppo_update(learner, optimizer, buffer, n_epochs=4, batch_size=64, clip=0.2):
    for _ in range(n_epochs):
        for batch in buffer.get(batch_size):
            dist = learner(batch["obs"])
            ratio = torch.exp(dist.log_prob(batch["actions"]) - batch["log_probs"])
            adv = batch["advantages"]
            loss = -torch.min(ratio * adv, ratio.clamp(1 - clip, 1 + clip) * adv).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return loss.detach()


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    obs_dim, n_actions = 16, 4
    learner = ActorNet(obs_dim, n_actions).to(device)
    actor_cpu = copy.deepcopy(learner).cpu()
    optimizer = torch.optim.Adam(learner.parameters(), lr=3e-4)
    for it in range(2):
        buffer = RolloutBuffer(n_steps=32, n_envs=8, obs_dim=obs_dim, device=device)
        collect(actor_cpu, buffer, obs_dim, rng)
        last_loss = ppo_update(learner, optimizer, buffer)
        actor_cpu.load_state_dict({k: v.cpu() for k, v in learner.state_dict().items()})
        print(f"iter {it}: loss {last_loss.item():.4f}")


if __name__ == "__main__":
    main()
