import numpy as np
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
mask = torch.ones(16, 16).to(device)
noise = torch.randn(16).to(device)
ids = torch.arange(10).cuda()


class Replay:
    def __init__(self, n, dim):
        self.states = torch.zeros(n, dim, device="cuda")

    def minibatches(self, count, size):
        for _ in range(count):
            picks = np.random.choice(len(self.states), size=size, replace=False)
            yield self.states[picks]


def update(policy, optimizer, replay):
    for states in replay.minibatches(8, 32):
        policy(states).sum().backward()
        optimizer.step()


@torch.no_grad()
def greedy_decode(model, src, steps, device):
    ys = torch.zeros(src.size(0), 1, dtype=torch.long, device=device)
    for _ in range(steps):
        mask = torch.nn.Transformer.generate_square_subsequent_mask(ys.size(1)).to(device)
        ys = torch.cat([ys, model(ys, mask)[:, -1:].argmax(-1)], dim=1)
    return ys
