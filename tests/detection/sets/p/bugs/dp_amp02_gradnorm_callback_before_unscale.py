# source: https://github.com/Lightning-AI/pytorch-lightning/issues/9205
# area: AMP
# bug: the after-backward callback measures and clips the gradient norm while the gradients are still multiplied by the GradScaler scale, so on a GPU the logged norm is ~65536x too large and clipping crushes every update
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Callback:
    def on_after_backward(self, trainer):
        pass

    def on_train_end(self, trainer):
        pass


class GradNormMonitor(Callback):
    """Tracks the global L2 gradient norm and optionally clips it."""

    def __init__(self, clip_val=None):
        self.clip_val = clip_val
        self.history = []

    def on_after_backward(self, trainer):
        params = [p for p in trainer.model.parameters() if p.grad is not None]
        if self.clip_val is not None:
            norm = torch.nn.utils.clip_grad_norm_(params, self.clip_val)  # expect: any
        else:
            norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params]))
        self.history.append(norm.detach())

    def on_train_end(self, trainer):
        norms = torch.stack(self.history).cpu()
        print(f"grad norm: first {norms[0]:.3f} last {norms[-1]:.3f} max {norms.max():.3f}")


class Trainer:
    def __init__(self, model, lr=1e-3, callbacks=(), precision=16):
        self.model = model.to(device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=0.9)
        self.use_amp = precision == 16 and device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)
        self.callbacks = list(callbacks)

    def training_step(self, x, y):
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=self.use_amp):
            return F.cross_entropy(self.model(x), y)

    def fit(self, loader, epochs=2):
        self.model.train()
        for _ in range(epochs):
            for x, y in loader:
                self.optimizer.zero_grad(set_to_none=True)
                loss = self.training_step(x, y)
                self.scaler.scale(loss).backward()
                for cb in self.callbacks:
                    cb.on_after_backward(self)
                self.scaler.step(self.optimizer)
                self.scaler.update()
        for cb in self.callbacks:
            cb.on_train_end(self)


def make_loader(n_batches=12, batch_size=32):
    g = torch.Generator().manual_seed(1)
    w = torch.randn(20, 5, generator=g)
    batches = []
    for _ in range(n_batches):
        x = torch.randn(batch_size, 20, generator=g)
        y = (x @ w).argmax(dim=1)
        batches.append((x.to(device), y.to(device)))
    return batches


if __name__ == "__main__":
    net = nn.Sequential(nn.Linear(20, 64), nn.GELU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 5))
    trainer = Trainer(net, callbacks=[GradNormMonitor(clip_val=1.0)])
    trainer.fit(make_loader())
