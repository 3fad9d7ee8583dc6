# source: https://github.com/gbionics/amp-rsl-rl/pull/12
# area: transfer & sync
# bug: the buffer lives on the GPU but minibatch indices are drawn with numpy on the host, so every sampled minibatch does a synchronous pageable host-to-device index copy
import numpy as np
import torch
import torch.nn as nn
from typing import Generator, Tuple


class TransitionBuffer:
    """Circular buffer of (state, next_state) pairs kept on the training device."""

    def __init__(self, obs_dim: int, capacity: int, device: torch.device) -> None:
        self.states = torch.zeros(capacity, obs_dim, device=device)
        self.next_states = torch.zeros(capacity, obs_dim, device=device)
        self.capacity = capacity
        self.device = device
        self.cursor = 0
        self.size = 0

    def insert(self, states: torch.Tensor, next_states: torch.Tensor) -> None:
        n = states.shape[0]
        idx = (torch.arange(n, device=self.device) + self.cursor) % self.capacity
        self.states[idx] = states
        self.next_states[idx] = next_states
        self.cursor = (self.cursor + n) % self.capacity
        self.size = min(self.capacity, self.size + n)

    def minibatches(self, num_batches: int, batch_size: int) -> Generator[Tuple[torch.Tensor, torch.Tensor], None, None]:
        for _ in range(num_batches):
            picks = np.random.choice(self.size, size=batch_size, replace=False)  # expect[w]: any
            yield self.states[picks], self.next_states[picks]  # expect[w]: any


class Discriminator(nn.Module):
    def __init__(self, obs_dim: int, hidden: int = 128) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(2 * obs_dim, hidden), nn.ELU(),
            nn.Linear(hidden, hidden), nn.ELU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, s: torch.Tensor, s_next: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([s, s_next], dim=-1))


def fake_rollout(num_envs: int, obs_dim: int, device: torch.device):
    s = torch.randn(num_envs, obs_dim, device=device)
    return s, s + 0.05 * torch.randn_like(s)


def expert_batch(batch_size: int, obs_dim: int, device: torch.device):
    s = torch.randn(batch_size, obs_dim, device=device) * 0.5
    return s, s + 0.01


def update_discriminator(disc, opt, buffer, obs_dim, device, epochs=2, num_batches=8, batch_size=256):
    bce = nn.BCEWithLogitsLoss()
    total = torch.zeros((), device=device)
    for _ in range(epochs):
        for policy_s, policy_ns in buffer.minibatches(num_batches, batch_size):
            exp_s, exp_ns = expert_batch(batch_size, obs_dim, device)
            logits_p = disc(policy_s, policy_ns)
            logits_e = disc(exp_s, exp_ns)
            loss = bce(logits_p, torch.zeros_like(logits_p)) + bce(logits_e, torch.ones_like(logits_e))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
    return total / (epochs * num_batches)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    obs_dim, num_envs = 32, 512
    buffer = TransitionBuffer(obs_dim, capacity=20000, device=device)
    disc = Discriminator(obs_dim).to(device)
    opt = torch.optim.Adam(disc.parameters(), lr=1e-4)
    for it in range(5):
        for _ in range(4):
            buffer.insert(*fake_rollout(num_envs, obs_dim, device))
        loss = update_discriminator(disc, opt, buffer, obs_dim, device)
        print(f"iter {it}: buffer {buffer.size}, disc loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
