# source: https://github.com/open-mmlab/mmcv/pull/643
# area: transfer & sync
# bug: the optimizer hook branches in Python on torch.isfinite(grad_norm) every iteration, forcing a GPU->host sync before each optimizer step
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import clip_grad_norm_

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class LogBuffer:
    def __init__(self):
        self.sums, self.counts = {}, {}

    def update(self, values, n=1):
        for key, value in values.items():
            self.sums[key] = self.sums.get(key, 0.0) + value * n
            self.counts[key] = self.counts.get(key, 0) + n

    def average(self):
        out = {k: float(self.sums[k] / self.counts[k]) for k in self.sums}
        self.sums.clear()
        self.counts.clear()
        return out


class OptimizerHook:
    def __init__(self, grad_clip=None):
        self.grad_clip = grad_clip

    def clip_grads(self, params):
        params = [p for p in params if p.requires_grad and p.grad is not None]
        if params:
            return clip_grad_norm_(params, **self.grad_clip)
        return None

    def after_train_iter(self, runner):
        runner.optimizer.zero_grad(set_to_none=True)
        runner.outputs["loss"].backward()
        if self.grad_clip is not None:
            grad_norm = self.clip_grads(runner.model.parameters())
            if grad_norm is not None:
                if not torch.isfinite(grad_norm):  # expect: any
                    runner.skipped_iters += 1
                    runner.optimizer.zero_grad(set_to_none=True)
                    return
                runner.log_buffer.update({"grad_norm": grad_norm.detach()},
                                         runner.outputs["num_samples"])
        runner.optimizer.step()


class Runner:
    def __init__(self, model, optimizer, hooks, log_interval=20):
        self.model, self.optimizer, self.hooks = model, optimizer, hooks
        self.log_interval = log_interval
        self.log_buffer = LogBuffer()
        self.skipped_iters = 0
        self.iter = 0
        self.outputs = {}

    def train_iter(self, data, target):
        logits = self.model(data)
        loss = F.cross_entropy(logits, target)
        self.outputs = {"loss": loss, "num_samples": data.size(0)}
        for hook in self.hooks:
            hook.after_train_iter(self)
        self.log_buffer.update({"loss": loss.detach()}, data.size(0))
        self.iter += 1
        if self.iter % self.log_interval == 0:
            stats = self.log_buffer.average()
            print(f"iter {self.iter}: " + ", ".join(f"{k}={v:.4f}" for k, v in stats.items()))

    def run(self, batches, epochs):
        self.model.train()
        for _ in range(epochs):
            for data, target in batches:
                self.train_iter(data, target)


def synthetic_batches(n_batches, batch_size, dim, n_cls):
    g = torch.Generator(device="cpu").manual_seed(0)
    centers = torch.randn(n_cls, dim, generator=g).to(device)
    out = []
    for _ in range(n_batches):
        y = torch.randint(0, n_cls, (batch_size,), device=device)
        x = centers[y] + 0.5 * torch.randn(batch_size, dim, device=device)
        out.append((x, y))
    return out


if __name__ == "__main__":
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    runner = Runner(model, opt, [OptimizerHook(grad_clip=dict(max_norm=5.0, norm_type=2))])
    runner.run(synthetic_batches(40, 64, 32, 10), epochs=2)
    print("skipped iterations:", runner.skipped_iters)
