# source: https://github.com/catalyst-team/catalyst/issues/1319
# area: AMP
# bug: the optimizer callback clips gradients while they are still multiplied by the GradScaler factor, so on a GPU the clip threshold is effectively divided by ~65536 and updates are crushed
import torch
import torch.nn as nn
import torch.nn.functional as F


class Callback:
    def on_batch_end(self, runner):
        pass


class OptimizerCallback(Callback):
    def __init__(self, max_grad_norm=1.0, accumulation_steps=2):
        self.max_grad_norm = max_grad_norm
        self.accumulation_steps = accumulation_steps
        self._counter = 0

    def on_batch_end(self, runner):
        if not runner.is_train:
            return
        self._counter += 1
        loss = runner.batch_loss / self.accumulation_steps
        runner.scaler.scale(loss).backward()
        if self._counter % self.accumulation_steps == 0:
            if self.max_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(runner.model.parameters(), self.max_grad_norm)  # expect: any
            runner.scaler.step(runner.optimizer)
            runner.scaler.update()
            runner.optimizer.zero_grad(set_to_none=True)


class LossMeterCallback(Callback):
    def __init__(self, device):
        self.total = torch.zeros((), device=device)
        self.count = 0

    def on_batch_end(self, runner):
        self.total += runner.batch_loss.detach()
        self.count += 1


class SupervisedRunner:
    def __init__(self, model, optimizer, device, callbacks):
        self.model = model
        self.optimizer = optimizer
        self.device = device
        self.callbacks = callbacks
        self.use_amp = device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)
        self.is_train = True
        self.batch_loss = None

    def handle_batch(self, features, targets):
        with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.use_amp):
            logits = self.model(features)
            self.batch_loss = F.cross_entropy(logits, targets)
        for cb in self.callbacks:
            cb.on_batch_end(self)

    def run_epoch(self, batches):
        self.model.train()
        for features, targets in batches:
            self.handle_batch(features.to(self.device), targets.to(self.device))


def make_batches(n_batches=8, batch_size=16, dim=20, classes=4):
    w = torch.randn(dim, classes)
    out = []
    for _ in range(n_batches):
        x = torch.randn(batch_size, dim)
        out.append((x, (x @ w).argmax(dim=1)))
    return out


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    meter = LossMeterCallback(device)
    runner = SupervisedRunner(model, optimizer, device, [OptimizerCallback(), meter])
    batches = make_batches()
    for epoch in range(3):
        runner.run_epoch(batches)
    print(f"avg loss {(meter.total / meter.count).item():.4f}")


if __name__ == "__main__":
    main()
