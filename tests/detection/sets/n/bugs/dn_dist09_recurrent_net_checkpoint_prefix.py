# source: https://github.com/aks2203/deep-thinking/issues/5
# area: porting & distributed
# bug: on GPU the net is wrapped in DataParallel and its state_dict (keys "module.*") is saved as-is; load_model_from_checkpoint loads it into a bare net and fails with missing and extra "module.*" keys
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock2D(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.conv1 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)

    def forward(self, x):
        return F.relu(x + self.conv2(F.relu(self.conv1(x))))


class DTNet(nn.Module):
    """Recurrent 'deep thinking' net: the same block is applied max_iters times."""

    def __init__(self, width=16, max_iters=6):
        super().__init__()
        self.max_iters = max_iters
        self.projection = nn.Sequential(nn.Conv2d(3, width, 3, padding=1, bias=False), nn.ReLU())
        self.recur_block = nn.Sequential(BasicBlock2D(width), BasicBlock2D(width))
        self.head = nn.Sequential(nn.Conv2d(width, 8, 3, padding=1, bias=False), nn.ReLU(), nn.Conv2d(8, 2, 3, padding=1, bias=False))

    def forward(self, x, iters_to_do=None):
        h = self.projection(x)
        for _ in range(iters_to_do or self.max_iters):
            h = self.recur_block(h)
        return self.head(h)


def get_model(width, max_iters, device):
    net = DTNet(width, max_iters).to(device)
    if device == "cuda":
        net = torch.nn.DataParallel(net)
    return net


def make_mazes(n=32, size=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    walls = (torch.rand(n, 1, size, size, generator=g) > 0.7).float()
    inputs = torch.cat([walls, 1 - walls, torch.zeros_like(walls)], dim=1)
    targets = (1 - walls).squeeze(1).long()
    return inputs, targets


def train(net, device, epochs=3):
    inputs, targets = make_mazes()
    inputs, targets = inputs.to(device), targets.to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    for _ in range(epochs):
        for start in range(0, len(inputs), 8):
            loss = F.cross_entropy(net(inputs[start : start + 8]), targets[start : start + 8])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    return net


def save_checkpoint(net, path, epoch):
    torch.save({"net": net.state_dict(), "epoch": epoch}, path)  # expect[w]: any


def load_model_from_checkpoint(path, width, max_iters, device):
    net = DTNet(width, max_iters)
    state = torch.load(path, map_location=device)
    net.load_state_dict(state["net"])  # expect[w]: any
    return net.to(device).eval(), state["epoch"]


@torch.no_grad()
def evaluate(net, device, test_iters=10):
    inputs, targets = make_mazes(n=16, size=16, seed=1)
    preds = net(inputs.to(device), iters_to_do=test_iters).argmax(dim=1)
    return (preds == targets.to(device)).float().mean().item()


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    width, max_iters = 16, 6
    net = train(get_model(width, max_iters, device), device)
    with tempfile.TemporaryDirectory() as out:
        path = os.path.join(out, "model_best.pth")
        save_checkpoint(net, path, epoch=3)
        test_net, epoch = load_model_from_checkpoint(path, width, max_iters, device)
        acc = evaluate(test_net, device)
    print(f"checkpoint from epoch {epoch}: test pixel acc {acc:.3f} with extrapolated iterations")


if __name__ == "__main__":
    main()
