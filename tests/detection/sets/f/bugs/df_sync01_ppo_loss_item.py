# source: https://github.com/pytorch/rl/issues/1783
# area: transfer & sync
# bug: the PPO loss module calls .item() on device tensors inside every minibatch forward, forcing a host-device sync per update
import torch
import torch.nn as nn
from torch.distributions import Categorical

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ActorCritic(nn.Module):
    def __init__(self, obs_dim=16, n_actions=4, hidden=64):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, n_actions)
        self.v = nn.Linear(hidden, 1)

    def forward(self, obs):
        h = self.body(obs)
        return Categorical(logits=self.pi(h)), self.v(h).squeeze(-1)


class ClipPPOLoss(nn.Module):
    def __init__(self, actor_critic, clip_eps=0.2, entropy_coef=0.01, value_coef=0.5):
        super().__init__()
        self.ac = actor_critic
        self.clip_eps = clip_eps
        self.entropy_coef = entropy_coef
        self.value_coef = value_coef

    def forward(self, batch):
        dist, value = self.ac(batch["obs"])
        log_prob = dist.log_prob(batch["action"])
        log_ratio = log_prob - batch["old_log_prob"]
        ratio = log_ratio.exp()
        adv = batch["advantage"]
        surr1 = ratio * adv
        surr2 = ratio.clamp(1 - self.clip_eps, 1 + self.clip_eps) * adv
        loss_objective = -torch.min(surr1, surr2).mean()
        loss_critic = (value - batch["returns"]).pow(2).mean()
        entropy = dist.entropy().mean()
        with torch.no_grad():
            clip_fraction = ((ratio - 1).abs() > self.clip_eps).float().mean().item()  # expect[it]: any
            approx_kl = ((ratio - 1) - log_ratio).mean().item()  # expect[it]: any
        total = loss_objective + self.value_coef * loss_critic - self.entropy_coef * entropy
        return total, {"clip_fraction": clip_fraction, "approx_kl": approx_kl}


def fake_rollout(policy, n_steps=1024, obs_dim=16):
    obs = torch.randn(n_steps, obs_dim, device=device)
    with torch.no_grad():
        dist, value = policy(obs)
        action = dist.sample()
        old_log_prob = dist.log_prob(action)
    rewards = torch.randn(n_steps, device=device)
    returns = rewards + 0.99 * value
    advantage = returns - value
    advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
    return {"obs": obs, "action": action, "old_log_prob": old_log_prob,
            "advantage": advantage, "returns": returns}


def ppo_update(loss_module, optimizer, data, epochs=4, minibatch=128):
    n = data["obs"].shape[0]
    log = []
    for _ in range(epochs):
        perm = torch.randperm(n, device=device)
        for start in range(0, n, minibatch):
            idx = perm[start:start + minibatch]
            mb = {k: v[idx] for k, v in data.items()}
            loss, stats = loss_module(mb)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(loss_module.parameters(), 0.5)
            optimizer.step()
            log.append(stats)
    return log


def main():
    torch.manual_seed(0)
    ac = ActorCritic().to(device)
    loss_module = ClipPPOLoss(ac)
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=3e-4)
    for it in range(3):
        data = fake_rollout(ac)
        log = ppo_update(loss_module, optimizer, data)
        mean_clip = sum(s["clip_fraction"] for s in log) / len(log)
        print(f"iter {it}: clip_fraction={mean_clip:.3f} approx_kl={log[-1]['approx_kl']:.4f}")


if __name__ == "__main__":
    main()
