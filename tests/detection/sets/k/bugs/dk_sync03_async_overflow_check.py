# source: https://github.com/deepspeedai/DeepSpeed/pull/501
# area: transfer & sync
# bug: the overflow check copies the grad sum into a pinned host buffer with non_blocking=True and reads it with float() before the copy has finished
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class DynamicLossScaler:
    def __init__(self, init_scale=2.0 ** 12, scale_factor=2.0, scale_window=50, min_scale=1.0):
        self.cur_scale = init_scale
        self.scale_factor = scale_factor
        self.scale_window = scale_window
        self.min_scale = min_scale
        self.last_overflow_iter = -1
        self.cur_iter = 0
        self._host_buf = torch.zeros(1, dtype=torch.float32, pin_memory=torch.cuda.is_available())

    def _has_inf_or_nan(self, grads):
        flat_sum = torch.stack([g.float().sum() for g in grads]).sum()
        cpu_sum = float(self._host_buf.copy_(flat_sum.view(1), non_blocking=True))  # expect: any
        return cpu_sum in (float("inf"), -float("inf")) or cpu_sum != cpu_sum

    def has_overflow(self, params):
        grads = [p.grad for p in params if p.grad is not None]
        if not grads:
            return False
        return self._has_inf_or_nan(grads)

    def update_scale(self, overflow):
        if overflow:
            self.cur_scale = max(self.cur_scale / self.scale_factor, self.min_scale)
            self.last_overflow_iter = self.cur_iter
        elif (self.cur_iter - self.last_overflow_iter) % self.scale_window == 0:
            self.cur_scale *= self.scale_factor
        self.cur_iter += 1


class FP16Optimizer:
    def __init__(self, model, lr=1e-3):
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.Adam(self.params, lr=lr)
        self.scaler = DynamicLossScaler()
        self.skipped = 0

    def backward(self, loss):
        (loss * self.scaler.cur_scale).backward()

    def step(self):
        overflow = self.scaler.has_overflow(self.params)
        self.scaler.update_scale(overflow)
        if overflow:
            self.skipped += 1
            self.optimizer.zero_grad(set_to_none=True)
            return False
        inv = 1.0 / self.scaler.cur_scale
        for p in self.params:
            p.grad.mul_(inv)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return True


def build_model():
    return nn.Sequential(nn.Linear(32, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 4))


def main():
    torch.manual_seed(0)
    model = build_model().to(device)
    opt = FP16Optimizer(model)
    x = torch.randn(512, 32, device=device)
    y = torch.randint(0, 4, (512,), device=device)
    for step in range(40):
        idx = torch.randint(0, 512, (64,), device=device)
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.backward(loss)
        opt.step()
    print(f"scale={opt.scaler.cur_scale} skipped={opt.skipped}")


if __name__ == "__main__":
    main()
