# source: https://github.com/huggingface/diffusers/issues/6086
# area: AMP
# bug: the whole denoiser, including the freshly injected trainable LoRA weights, is cast to float16 when mixed_precision="fp16"; on a GPU GradScaler then raises "Attempting to unscale FP16 gradients"
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class TrainArgs:
    mixed_precision: str = "fp16"
    rank: int = 4
    lr: float = 1e-4
    max_grad_norm: float = 1.0
    steps: int = 12
    batch_size: int = 8


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, rank: int):
        super().__init__()
        self.base = base
        self.down = nn.Linear(base.in_features, rank, bias=False)
        self.up = nn.Linear(rank, base.out_features, bias=False)
        nn.init.kaiming_uniform_(self.down.weight, a=math.sqrt(5))
        nn.init.zeros_(self.up.weight)

    def forward(self, x):
        return self.base(x) + self.up(self.down(x))


class TinyDenoiser(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.to_q = nn.Linear(dim, dim)
        self.to_v = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, t):
        h = F.silu(self.to_q(x) + t[:, None, None]) * self.to_v(x)
        return self.out(h)


def inject_lora(model: nn.Module, rank: int):
    for name in ("to_q", "to_v"):
        setattr(model, name, LoRALinear(getattr(model, name), rank))
    return [p for n, p in model.named_parameters() if ".down." in n or ".up." in n]


def main():
    args = TrainArgs()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_fp16 = args.mixed_precision == "fp16" and device.type == "cuda"
    weight_dtype = torch.float16 if use_fp16 else torch.float32

    unet = TinyDenoiser()
    unet.requires_grad_(False)
    lora_params = inject_lora(unet, args.rank)
    unet.to(device, dtype=weight_dtype)  # expect: any

    optimizer = torch.optim.AdamW(lora_params, lr=args.lr)
    scaler = torch.amp.GradScaler("cuda", enabled=use_fp16)

    for step in range(args.steps):
        latents = torch.randn(args.batch_size, 16, 64, device=device, dtype=weight_dtype)
        noise = torch.randn_like(latents)
        t = torch.rand(args.batch_size, device=device, dtype=weight_dtype)
        noisy = latents + t[:, None, None] * noise
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_fp16):
            pred = unet(noisy, t)
            loss = F.mse_loss(pred.float(), noise.float())
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(lora_params, args.max_grad_norm)
        scaler.step(optimizer)
        scaler.update()

    print("trained LoRA params:", sum(p.numel() for p in lora_params), "dtype:", lora_params[0].dtype)


if __name__ == "__main__":
    main()
