# twin of: bugs/dn_amp01_clip_hook_before_unscale.py
# area: AMP
# correct: the plugin unscales the optimizer's gradients before running the before-step hooks, so clipping sees true gradient norms
import torch
import torch.nn as nn
import torch.nn.functional as F


class Callback:
    def on_before_optimizer_step(self, model, optimizer):
        pass


class GradClipCallback(Callback):
    def __init__(self, max_norm=1.0):
        self.max_norm = max_norm
        self.norms = []

    def on_before_optimizer_step(self, model, optimizer):
        total = torch.nn.utils.clip_grad_norm_(model.parameters(), self.max_norm)
        self.norms.append(total.detach())


class NativeMixedPrecisionPlugin:
    def __init__(self, device):
        self.device = device
        self.enabled = device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.enabled)

    def autocast(self):
        return torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.enabled)

    def backward(self, loss):
        self.scaler.scale(loss).backward()

    def optimizer_step(self, model, optimizer, callbacks):
        self.scaler.unscale_(optimizer)
        for cb in callbacks:
            cb.on_before_optimizer_step(model, optimizer)
        self.scaler.step(optimizer)
        self.scaler.update()


class TinyTrainer:
    def __init__(self, model, optimizer, plugin, callbacks):
        self.model = model
        self.optimizer = optimizer
        self.plugin = plugin
        self.callbacks = callbacks

    def training_step(self, x, y):
        with self.plugin.autocast():
            logits = self.model(x)
            loss = F.cross_entropy(logits, y)
        return loss

    def fit(self, loader, epochs=2):
        self.model.train()
        for _ in range(epochs):
            for x, y in loader:
                x = x.to(self.plugin.device, non_blocking=True)
                y = y.to(self.plugin.device, non_blocking=True)
                self.optimizer.zero_grad(set_to_none=True)
                loss = self.training_step(x, y)
                self.plugin.backward(loss)
                self.plugin.optimizer_step(self.model, self.optimizer, self.callbacks)


def make_loader(n=256, dim=32, classes=5, batch_size=32):
    xs = torch.randn(n, dim)
    ys = torch.randint(0, classes, (n,))
    ds = torch.utils.data.TensorDataset(xs, ys)
    return torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=True,
                                       pin_memory=torch.cuda.is_available())


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 5)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    clipper = GradClipCallback(max_norm=1.0)
    trainer = TinyTrainer(model, optimizer, NativeMixedPrecisionPlugin(device), [clipper])
    trainer.fit(make_loader())
    print("steps:", len(clipper.norms), "last grad norm:", float(clipper.norms[-1]))


if __name__ == "__main__":
    main()
