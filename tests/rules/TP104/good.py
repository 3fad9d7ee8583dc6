import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
mask = torch.ones(16, 16, device=device)
half = torch.ones(16).to(torch.float16)
x = torch.zeros(4).to(device, non_blocking=True)
g = torch.Generator().manual_seed(0)
noise = torch.randn(4, generator=g).to(device)  # a seeded CPU stream: drawn on the CPU


class DeviceReplay:
    def __init__(self, n, dim):
        self.states = torch.zeros(n, dim, device="cuda")

    def minibatches(self, count, size):
        for _ in range(count):
            picks = torch.randperm(len(self.states), device="cuda")[:size]
            yield self.states[picks]


def update_on_device(policy, optimizer, replay):
    for states in replay.minibatches(8, 32):
        policy(states).sum().backward()
        optimizer.step()


@torch.no_grad()
def greedy_decode(model, src, steps, device):
    ys = torch.zeros(src.size(0), 1, dtype=torch.long, device=device)
    for _ in range(steps):
        mask = torch.nn.Transformer.generate_square_subsequent_mask(ys.size(1), device=device)
        ys = torch.cat([ys, model(ys, mask)[:, -1:].argmax(-1)], dim=1)
    return ys


def featurize(values):
    return (values - values.mean()) / (values.std() + 1e-6)


class HostFeatures(torch.nn.Module):
    def forward(self, x):
        # computed from the input's values, not from sizes alone: nothing to keep
        return torch.from_numpy(featurize(x.detach().cpu().numpy())).to(x.device)


def coords_grid(batch, height, width, device):
    ys, xs = torch.meshgrid(
        torch.arange(height, device=device), torch.arange(width, device=device), indexing="ij"
    )
    return torch.stack([xs, ys]).float()[None].repeat(batch, 1, 1, 1)


def jitter(x):
    return torch.randn(x.shape)  # from a tensor's values too, not sizes alone


class FlowHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 2, 3, padding=1)

    def forward(self, fmap):
        n, _, h, w = fmap.shape
        coords = coords_grid(n, h, w, fmap.device)  # made on the device
        return self.conv(fmap) + coords + jitter(fmap).to(fmap.device)
