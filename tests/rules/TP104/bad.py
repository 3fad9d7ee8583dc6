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


def sinusoids(dim, length):
    angles = np.arange(length)[:, None] / np.power(10000, np.arange(dim) / dim)
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1).astype("float32")


class RayEncoder(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, feats):
        n_rays, n_samples, _ = feats.shape
        table = torch.from_numpy(sinusoids(self.dim, n_samples)).to(feats.device).unsqueeze(0)
        return feats + table


def coords_grid(batch, height, width):
    ys, xs = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    return torch.stack([xs, ys]).float()[None].repeat(batch, 1, 1, 1)


class FlowHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 2, 3, padding=1)

    def initial_coords(self, fmap):
        n, _, h, w = fmap.shape
        return coords_grid(n, h // 8, w // 8).to(fmap.device)

    def forward(self, fmap):
        return self.conv(fmap) + self.initial_coords(fmap)
