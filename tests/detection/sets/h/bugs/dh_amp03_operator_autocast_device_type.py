# source: https://github.com/neuraloperator/neuraloperator/pull/407
# area: AMP
# bug: the autocast device type is derived with str(device) == "cuda", so for torch.device("cuda", 0) it becomes "cpu" and the GPU forward silently runs in full fp32 with no mixed precision
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class SpectralConv1d(nn.Module):
    def __init__(self, in_ch, out_ch, modes):
        super().__init__()
        self.modes = modes
        scale = 1.0 / (in_ch * out_ch)
        self.weight = nn.Parameter(scale * torch.randn(in_ch, out_ch, modes, dtype=torch.cfloat))

    def forward(self, x):
        x_ft = torch.fft.rfft(x.float(), dim=-1)
        out_ft = torch.zeros(x.size(0), self.weight.size(1), x_ft.size(-1), dtype=torch.cfloat, device=x.device)
        out_ft[..., : self.modes] = torch.einsum("bix,iox->box", x_ft[..., : self.modes], self.weight)
        return torch.fft.irfft(out_ft, n=x.size(-1), dim=-1)


class FNO1d(nn.Module):
    def __init__(self, modes=8, width=32, n_layers=3):
        super().__init__()
        self.lift = nn.Conv1d(2, width, 1)
        self.spectral = nn.ModuleList([SpectralConv1d(width, width, modes) for _ in range(n_layers)])
        self.pointwise = nn.ModuleList([nn.Conv1d(width, width, 1) for _ in range(n_layers)])
        self.project = nn.Sequential(nn.Conv1d(width, 64, 1), nn.GELU(), nn.Conv1d(64, 1, 1))

    def forward(self, a, grid):
        h = self.lift(torch.cat([a, grid], dim=1))
        for spec, pw in zip(self.spectral, self.pointwise):
            h = F.gelu(spec(h) + pw(h))
        return self.project(h)


class Trainer:
    def __init__(self, model, n_epochs, device, mixed_precision=False):
        self.model = model
        self.n_epochs = n_epochs
        self.device = device
        if str(self.device) == "cuda":  # expect: any
            self.autocast_device_type = "cuda"
        else:
            self.autocast_device_type = "cpu"
        self.mixed_precision = mixed_precision
        self.scaler = torch.amp.GradScaler("cuda", enabled=mixed_precision and device.type == "cuda")

    def train_one_epoch(self, loader, optimizer, grid):
        self.model.train()
        total = torch.zeros((), device=self.device)
        for a, u in loader:
            a = a.to(self.device, non_blocking=True)
            u = u.to(self.device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=self.autocast_device_type, enabled=self.mixed_precision):
                pred = self.model(a, grid.expand(a.size(0), -1, -1))
                loss = F.mse_loss(pred.float(), u)
            self.scaler.scale(loss).backward()
            self.scaler.step(optimizer)
            self.scaler.update()
            total += loss.detach()
        return total / len(loader)

    def train(self, loader, optimizer, grid):
        for epoch in range(self.n_epochs):
            avg = self.train_one_epoch(loader, optimizer, grid)
            print(f"epoch {epoch}: train mse {avg.item():.5f}")


def make_burgers_like(n_samples=64, n_points=64):
    x = torch.linspace(0, 1, n_points)
    coeffs = torch.randn(n_samples, 4)
    a = sum(coeffs[:, k : k + 1] * torch.sin((k + 1) * torch.pi * x) for k in range(4))
    u = sum(coeffs[:, k : k + 1] * math.exp(-((k + 1) ** 2) * 0.05) * torch.sin((k + 1) * torch.pi * x) for k in range(4))
    return a[:, None, :], u[:, None, :], x.view(1, 1, -1)


def main():
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda", 0) if use_cuda else torch.device("cpu")
    torch.manual_seed(0)
    a, u, grid = make_burgers_like()
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(a, u), batch_size=16, shuffle=True, pin_memory=use_cuda
    )
    model = FNO1d().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    trainer = Trainer(model, n_epochs=3, device=device, mixed_precision=use_cuda)
    trainer.train(loader, optimizer, grid.to(device))


if __name__ == "__main__":
    main()
