# source: https://github.com/marlbenchmark/off-policy/pull/12
# area: device placement
# bug: the per-agent Q heads live in a plain Python list, so critic.to(device) leaves them on the CPU (and the optimizer never sees them)
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class CriticConfig:
    obs_dim = 12
    act_dim = 4
    n_agents = 3
    hidden_size = 64
    num_q_outs = 2
    gamma = 0.95
    lr = 1e-3


def init_(layer, gain=1.0):
    nn.init.orthogonal_(layer.weight, gain=gain)
    nn.init.zeros_(layer.bias)
    return layer


class MultiHeadCentralCritic(nn.Module):
    def __init__(self, cfg, device):
        super().__init__()
        joint_dim = cfg.n_agents * (cfg.obs_dim + cfg.act_dim)
        self.trunk = nn.Sequential(
            init_(nn.Linear(joint_dim, cfg.hidden_size), gain=nn.init.calculate_gain("relu")),
            nn.ReLU(),
            init_(nn.Linear(cfg.hidden_size, cfg.hidden_size), gain=nn.init.calculate_gain("relu")),
            nn.ReLU(),
        )
        self.q_outs = [init_(nn.Linear(cfg.hidden_size, 1)) for _ in range(cfg.num_q_outs)]  # expect: any
        self.to(device)

    def forward(self, central_obs, central_act):
        h = self.trunk(torch.cat([central_obs, central_act], dim=-1))
        return [head(h) for head in self.q_outs]


def sample_batch(cfg, batch_size, device):
    obs = torch.randn(batch_size, cfg.n_agents * cfg.obs_dim, device=device)
    act = torch.rand(batch_size, cfg.n_agents * cfg.act_dim, device=device)
    rew = torch.randn(batch_size, 1, device=device)
    next_obs = torch.randn_like(obs)
    next_act = torch.rand_like(act)
    done = torch.zeros(batch_size, 1, device=device)
    return obs, act, rew, next_obs, next_act, done


def critic_update(critic, target_critic, optimizer, batch, gamma):
    obs, act, rew, next_obs, next_act, done = batch
    with torch.no_grad():
        next_qs = target_critic(next_obs, next_act)
        next_q = torch.min(torch.cat(next_qs, dim=-1), dim=-1, keepdim=True).values
        target = rew + gamma * (1.0 - done) * next_q
    qs = critic(obs, act)
    loss = sum(F.mse_loss(q, target) for q in qs)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.detach()


def soft_update(target, source, tau=0.01):
    with torch.no_grad():
        for tp, sp in zip(target.parameters(), source.parameters()):
            tp.mul_(1.0 - tau).add_(sp, alpha=tau)


def main():
    cfg = CriticConfig()
    critic = MultiHeadCentralCritic(cfg, device)
    target_critic = MultiHeadCentralCritic(cfg, device)
    target_critic.load_state_dict(critic.state_dict())
    optimizer = torch.optim.Adam(critic.parameters(), lr=cfg.lr)

    losses = []
    for step in range(20):
        batch = sample_batch(cfg, 128, device)
        losses.append(critic_update(critic, target_critic, optimizer, batch, cfg.gamma))
        soft_update(target_critic, critic)
    print("mean critic loss:", torch.stack(losses).mean().item())


if __name__ == "__main__":
    main()
