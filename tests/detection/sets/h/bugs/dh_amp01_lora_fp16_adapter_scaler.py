# source: https://github.com/zai-org/CogVideo/issues/775
# area: AMP
# bug: the trainable LoRA weights are created in the fp16 dtype of the frozen base model, so on a GPU GradScaler.unscale_ raises "Attempting to unscale FP16 gradients"
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class FinetuneConfig:
    rank: int = 4
    alpha: float = 8.0
    lr: float = 1e-3
    max_grad_norm: float = 1.0
    steps: int = 6
    batch_size: int = 4
    frames: int = 4
    channels: int = 16


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, rank: int, alpha: float):
        super().__init__()
        self.base = base
        self.scaling = alpha / rank
        dtype, device = base.weight.dtype, base.weight.device
        self.lora_down = nn.Parameter(torch.empty(rank, base.in_features, device=device, dtype=dtype))  # expect[lora]: any
        self.lora_up = nn.Parameter(torch.zeros(base.out_features, rank, device=device, dtype=dtype))  # expect[lora]: any
        nn.init.kaiming_uniform_(self.lora_down, a=math.sqrt(5))

    def forward(self, x):
        delta = F.linear(F.linear(x, self.lora_down), self.lora_up)
        return self.base(x) + delta * self.scaling


class TinyVideoDenoiser(nn.Module):
    def __init__(self, channels: int, hidden: int = 64):
        super().__init__()
        self.proj_in = nn.Linear(channels, hidden)
        self.time_embed = nn.Linear(1, hidden)
        self.blocks = nn.ModuleList(
            [nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, hidden), nn.GELU()) for _ in range(2)]
        )
        self.proj_out = nn.Linear(hidden, channels)

    def forward(self, x, t):
        h = self.proj_in(x) + self.time_embed(t.view(-1, 1))[:, None, :]
        for block in self.blocks:
            h = h + block(h)
        return self.proj_out(h)


def inject_lora(model: TinyVideoDenoiser, cfg: FinetuneConfig):
    for block in model.blocks:
        block[1] = LoRALinear(block[1], cfg.rank, cfg.alpha)
    return [p for n, p in model.named_parameters() if "lora_" in n]


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    weight_dtype = torch.float16 if use_amp else torch.float32
    cfg = FinetuneConfig()
    torch.manual_seed(0)

    model = TinyVideoDenoiser(cfg.channels)
    model.requires_grad_(False)
    model.to(device, dtype=weight_dtype)
    params = inject_lora(model, cfg)
    optimizer = torch.optim.AdamW(params, lr=cfg.lr)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)

    running = torch.zeros((), device=device)
    for step in range(cfg.steps):
        clean = torch.randn(cfg.batch_size, cfg.frames, cfg.channels, device=device)
        noise = torch.randn_like(clean)
        t = torch.rand(cfg.batch_size, device=device)
        noisy = (1 - t.view(-1, 1, 1)) * clean + t.view(-1, 1, 1) * noise
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            pred = model(noisy, t)
            loss = F.mse_loss(pred.float(), noise - clean)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
        scaler.step(optimizer)
        scaler.update()
        running += loss.detach()
    print(f"mean loss over {cfg.steps} steps: {(running / cfg.steps).item():.4f}")


if __name__ == "__main__":
    main()
