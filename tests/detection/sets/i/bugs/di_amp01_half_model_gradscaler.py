# source: https://github.com/bitsandbytes-foundation/bitsandbytes/issues/945
# area: AMP
# bug: the model is cast to fp16 with .half() on CUDA and then trained with GradScaler, so scaler.step raises "Attempting to unscale FP16 gradients"
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass


@dataclass
class FinetuneConfig:
    vocab_size: int = 500
    dim: int = 64
    num_labels: int = 4
    seq_len: int = 24
    batch_size: int = 16
    steps: int = 12
    lr: float = 3e-4
    fp16: bool = True


class TinyEncoderClassifier(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.dim)
        layer = nn.TransformerEncoderLayer(cfg.dim, nhead=4, dim_feedforward=cfg.dim * 2,
                                           batch_first=True, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(cfg.dim, cfg.num_labels)

    def forward(self, input_ids):
        h = self.encoder(self.embed(input_ids))
        return self.head(h.mean(dim=1))


def load_model(cfg, device):
    model = TinyEncoderClassifier(cfg).to(device)
    if cfg.fp16 and device.type == "cuda":
        model = model.half()  # expect: any
    return model


def synthetic_batches(cfg, device, n):
    g = torch.Generator().manual_seed(0)
    for _ in range(n):
        ids = torch.randint(0, cfg.vocab_size, (cfg.batch_size, cfg.seq_len), generator=g)
        labels = torch.randint(0, cfg.num_labels, (cfg.batch_size,), generator=g)
        yield ids.to(device), labels.to(device)


def finetune(cfg, device):
    model = load_model(cfg, device)
    use_amp = cfg.fp16 and device.type == "cuda"
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    model.train()
    running = torch.zeros((), device=device)
    for step, (ids, labels) in enumerate(synthetic_batches(cfg, device, cfg.steps)):
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            logits = model(ids)
            loss = F.cross_entropy(logits.float(), labels)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        running += loss.detach()
    return (running / cfg.steps).item()


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    cfg = FinetuneConfig()
    print(f"mean train loss: {finetune(cfg, device):.4f}")
