# source: https://github.com/2U1/Qwen-VL-Series-Finetune/issues/184
# area: AMP
# bug: trainable adapter weights are cast to float16 on the GPU and then trained with GradScaler, so scaler.unscale_ raises "Attempting to unscale FP16 gradients"
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass
from torch.utils.data import DataLoader, TensorDataset


@dataclass
class FinetuneArgs:
    fp16: bool = True
    lr: float = 2e-4
    max_grad_norm: float = 1.0
    epochs: int = 2
    batch_size: int = 8
    vocab: int = 128
    hidden: int = 64
    lora_rank: int = 4


class LoRALinear(nn.Module):
    def __init__(self, in_f, out_f, rank):
        super().__init__()
        self.base = nn.Linear(in_f, out_f)
        self.base.requires_grad_(False)
        self.lora_a = nn.Parameter(torch.randn(rank, in_f) * 0.01)
        self.lora_b = nn.Parameter(torch.zeros(out_f, rank))

    def forward(self, x):
        return self.base(x) + F.linear(F.linear(x, self.lora_a), self.lora_b)


class TinyVLM(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.vision = nn.Sequential(nn.Conv2d(3, 16, 4, stride=4), nn.GELU(), nn.Flatten(2))
        self.vision.requires_grad_(False)
        self.projector = nn.Linear(16, args.hidden)
        self.embed = nn.Embedding(args.vocab, args.hidden)
        self.embed.requires_grad_(False)
        self.mix = LoRALinear(args.hidden, args.hidden, args.lora_rank)
        self.lm_head = LoRALinear(args.hidden, args.vocab, args.lora_rank)

    def forward(self, pixels, input_ids):
        img_tokens = self.projector(self.vision(pixels).transpose(1, 2))
        txt_tokens = self.embed(input_ids)
        h = torch.cat([img_tokens, txt_tokens], dim=1)
        h = F.gelu(self.mix(h))
        return self.lm_head(h[:, img_tokens.shape[1]:])


def build_model(args, device):
    model = TinyVLM(args)
    load_dtype = torch.float16 if (args.fp16 and device.type == "cuda") else torch.float32
    model.to(device=device, dtype=load_dtype)  # expect[half]: any
    return model


def make_loader(args):
    pixels = torch.rand(64, 3, 16, 16)
    ids = torch.randint(0, args.vocab, (64, 12))
    return DataLoader(TensorDataset(pixels, ids), batch_size=args.batch_size,
                      shuffle=True, pin_memory=torch.cuda.is_available())


def train(args):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = args.fp16 and device.type == "cuda"
    model = build_model(args, device)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=args.lr)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)  # expect[half]: any
    running = torch.zeros((), device=device)
    for epoch in range(args.epochs):
        for pixels, ids in make_loader(args):
            pixels = pixels.to(device, non_blocking=True)
            ids = ids.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
                logits = model(pixels, ids[:, :-1])
                loss = F.cross_entropy(logits.reshape(-1, args.vocab).float(), ids[:, 1:].reshape(-1))
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(params, args.max_grad_norm)
            scaler.step(optimizer)
            scaler.update()
            running += loss.detach()
        print(f"epoch {epoch} mean loss {running.item() / (64 // args.batch_size):.4f}")
        running.zero_()


if __name__ == "__main__":
    train(FinetuneArgs())
