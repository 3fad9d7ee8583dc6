# source: https://github.com/Lightning-AI/pytorch-lightning/issues/9599
# area: AMP
# bug: gradient clipping runs in the after-backward hook on still-scaled gradients, and unscale_ only happens later in the optimizer-step hook, so on CUDA the clip threshold is compared to norms inflated by the loss scale and every update is crushed
import torch
import torch.nn as nn
import torch.nn.functional as F


class MiniLoop:
    """Hook-based training loop in the style of a small Lightning-like framework."""

    def __init__(self, model, optimizer, device, gradient_clip_val=1.0, precision="16-mixed"):
        self.model = model
        self.optimizer = optimizer
        self.device = device
        self.gradient_clip_val = gradient_clip_val
        self.use_amp = precision == "16-mixed" and device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)
        self.global_step = 0

    def training_step(self, batch):
        x, y = batch
        with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.use_amp):
            logits = self.model(x)
            return F.cross_entropy(logits, y)

    def backward(self, loss):
        self.scaler.scale(loss).backward()
        self.on_after_backward()

    def on_after_backward(self):
        if self.gradient_clip_val:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.gradient_clip_val)  # expect: any

    def optimizer_step(self):
        self.scaler.unscale_(self.optimizer)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        self.global_step += 1

    def fit(self, loader, epochs=2):
        self.model.train()
        history = []
        for _ in range(epochs):
            running = torch.zeros((), device=self.device)
            for batch in loader:
                batch = [t.to(self.device) for t in batch]
                loss = self.training_step(batch)
                self.backward(loss)
                self.optimizer_step()
                running += loss.detach()
            history.append(running / len(loader))
        return [h.item() for h in history]


def build_classifier(in_dim=20, hidden=64, n_classes=4):
    return nn.Sequential(nn.Linear(in_dim, hidden), nn.GELU(), nn.Dropout(0.1), nn.Linear(hidden, n_classes))


def make_loader(n=256, in_dim=20, n_classes=4, batch_size=32):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, in_dim, generator=g)
    w = torch.randn(in_dim, n_classes, generator=g)
    y = (x @ w).argmax(dim=1)
    ds = torch.utils.data.TensorDataset(x, y)
    return torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=True, generator=g)


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = build_classifier().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loop = MiniLoop(model, opt, device, gradient_clip_val=0.5)
    print("epoch losses:", loop.fit(make_loader()))
