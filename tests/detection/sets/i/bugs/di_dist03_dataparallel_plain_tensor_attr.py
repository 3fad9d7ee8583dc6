# source: https://github.com/htqin/IR-Net/issues/19
# area: porting & distributed
# bug: the EDE k/t schedule tensors are plain module attributes, so DataParallel replicas on cuda:1.. keep pointing at the cuda:0 copies and backward mixes devices
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class BinaryQuantize(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k, t):
        ctx.save_for_backward(x, k, t)
        return torch.sign(x)

    @staticmethod
    def backward(ctx, grad_output):
        x, k, t = ctx.saved_tensors
        grad_input = k * t * (1 - torch.pow(torch.tanh(x * t), 2)) * grad_output
        return grad_input, None, None


class BiConv2d(nn.Conv2d):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.set_schedule(10.0, 0.1)

    def set_schedule(self, k, t, device=None):
        self.k = torch.tensor([k], dtype=torch.float32, device=device)  # expect[a]: any
        self.t = torch.tensor([t], dtype=torch.float32, device=device)  # expect[a]: any

    def forward(self, x):
        w = self.weight
        bw = w - w.mean(dim=(1, 2, 3), keepdim=True)
        bw = bw / bw.flatten(1).std(dim=1).view(-1, 1, 1, 1)
        scale = bw.abs().flatten(1).mean(dim=1).view(-1, 1, 1, 1).detach()
        bw = BinaryQuantize.apply(bw, self.k, self.t) * scale
        ba = BinaryQuantize.apply(x, self.k, self.t)
        return F.conv2d(ba, bw, self.bias, self.stride, self.padding)


class BiResNetTiny(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32))
        self.body = nn.Sequential(
            BiConv2d(32, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.Hardtanh(),
            BiConv2d(32, 64, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(64), nn.Hardtanh(),
        )
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x):
        x = self.body(self.stem(x))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def ede_schedule(epoch, total_epochs, t_min=0.1, t_max=10.0):
    t = t_min * math.pow(10, (epoch / total_epochs) * math.log10(t_max / t_min))
    k = max(1.0 / t, 1.0)
    return k, t


def update_ede(net, epoch, total_epochs, device):
    k, t = ede_schedule(epoch, total_epochs)
    for m in net.modules():
        if isinstance(m, BiConv2d):
            m.set_schedule(k, t, device)


def main():
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    base = BiResNetTiny().to(device)
    model = nn.DataParallel(base) if torch.cuda.device_count() > 1 else base
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    images = torch.randn(128, 3, 16, 16)
    labels = torch.randint(0, 10, (128,))
    epochs = 3
    for epoch in range(epochs):
        update_ede(base, epoch, epochs, device)
        model.train()
        running = torch.zeros((), device=device)
        for i in range(0, len(images), 32):
            x = images[i:i + 32].to(device)
            y = labels[i:i + 32].to(device)
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            running += loss.detach()
        print(f"epoch {epoch} loss {(running / 4).item():.4f}")


if __name__ == "__main__":
    main()
