# source: https://github.com/huggingface/accelerate/issues/1714
# area: AMP
# bug: the optimizer wrapper calls scaler.get_scale() before and after every step to detect skipped updates; get_scale() copies the scale to the host, forcing a GPU sync each iteration
import torch
import torch.nn as nn
import torch.nn.functional as F


class AmpOptimizer:
    """Wraps an optimizer + GradScaler and records whether the last step was skipped."""

    def __init__(self, optimizer, scaler):
        self.optimizer = optimizer
        self.scaler = scaler
        self.step_was_skipped = False

    def zero_grad(self):
        self.optimizer.zero_grad(set_to_none=True)

    def backward(self, loss):
        self.scaler.scale(loss).backward()

    def step(self):
        scale_before = self.scaler.get_scale()  # expect[sync]: any
        self.scaler.step(self.optimizer)
        self.scaler.update()
        scale_after = self.scaler.get_scale()  # expect[sync]: any
        self.step_was_skipped = scale_after < scale_before


class MLPRegressor(nn.Module):
    def __init__(self, d_in=64, hidden=256):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


class Prefetcher:
    def __init__(self, batches, device):
        self.batches = batches
        self.device = device

    def __iter__(self):
        for x, y in self.batches:
            yield x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)


def build_batches(n, bs, device):
    pin = device.type == "cuda"
    g = torch.Generator().manual_seed(0)
    out = []
    for _ in range(n):
        x = torch.randn(bs, 64, generator=g)
        y = x[:, :4].sum(1) + 0.1 * torch.randn(bs, generator=g)
        out.append((x.pin_memory() if pin else x, y.pin_memory() if pin else y))
    return out


def train(device, epochs=2):
    use_amp = device.type == "cuda"
    model = MLPRegressor().to(device)
    opt = AmpOptimizer(torch.optim.AdamW(model.parameters(), lr=1e-3),
                       torch.amp.GradScaler("cuda", enabled=use_amp))
    sched = torch.optim.lr_scheduler.StepLR(opt.optimizer, step_size=10, gamma=0.5)
    loader = Prefetcher(build_batches(20, 128, device), device)
    for _ in range(epochs):
        epoch_loss = torch.zeros((), device=device)
        for x, y in loader:
            opt.zero_grad()
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
                loss = F.mse_loss(model(x).float(), y)
            opt.backward(loss)
            opt.step()
            if not opt.step_was_skipped:
                sched.step()
            epoch_loss += loss.detach()
        print(f"epoch loss {epoch_loss.item() / 20:.4f}")


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    train(device)
