# twin of: bugs/dg_amp05_accum_unscale_every_microstep.py
# area: AMP
# correct: scaler.unscale_ and clipping run only on the accumulation boundary, right before scaler.step and scaler.update, so every accumulated gradient is unscaled exactly once
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class SFTArguments:
    per_device_batch_size: int = 4
    gradient_accumulation_steps: int = 4
    max_grad_norm: float = 1.0
    learning_rate: float = 5e-4
    num_micro_batches: int = 12
    fp16: bool = torch.cuda.is_available()


class AdapterRegressor(nn.Module):
    def __init__(self, in_dim=32, rank=4):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(in_dim, 64), nn.Tanh(), nn.Linear(64, 64))
        self.lora_a = nn.Linear(64, rank, bias=False)
        self.lora_b = nn.Linear(rank, 64, bias=False)
        nn.init.zeros_(self.lora_b.weight)
        self.head = nn.Linear(64, 1)
        for p in self.backbone.parameters():
            p.requires_grad_(False)

    def forward(self, x):
        h = self.backbone(x)
        return self.head(h + self.lora_b(self.lora_a(h))).squeeze(-1)


class AccumulatingTrainer:
    def __init__(self, model, args: SFTArguments, device):
        self.model = model
        self.args = args
        self.device = device
        params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(params, lr=args.learning_rate)
        self.scaler = torch.amp.GradScaler("cuda", enabled=args.fp16)
        self.grad_norms = []

    def _clip_and_measure(self):
        self.scaler.unscale_(self.optimizer)
        return torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.args.max_grad_norm)

    def train(self, data_iter):
        self.model.train()
        accum = self.args.gradient_accumulation_steps
        for micro_step, (x, y) in enumerate(data_iter):
            x, y = x.to(self.device), y.to(self.device)
            with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.args.fp16):
                loss = F.mse_loss(self.model(x).float(), y) / accum
            self.scaler.scale(loss).backward()
            if (micro_step + 1) % accum == 0:
                grad_norm = self._clip_and_measure()
                self.scaler.step(self.optimizer)
                self.scaler.update()
                self.optimizer.zero_grad(set_to_none=True)
                self.grad_norms.append(grad_norm.detach())
        return torch.stack(self.grad_norms).cpu()


def micro_batches(args: SFTArguments, in_dim=32):
    g = torch.Generator().manual_seed(7)
    w = torch.randn(in_dim, generator=g)
    for _ in range(args.num_micro_batches):
        x = torch.randn(args.per_device_batch_size, in_dim, generator=g)
        yield x, x @ w * 0.1


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    args = SFTArguments()
    trainer = AccumulatingTrainer(AdapterRegressor().to(device), args, device)
    print("grad norms per optimizer step:", trainer.train(micro_batches(args)).tolist())
