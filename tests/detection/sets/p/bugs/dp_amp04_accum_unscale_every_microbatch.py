# source: https://github.com/huggingface/transformers/issues/24449
# area: AMP
# bug: with gradient accumulation the loop calls scaler.unscale_ (for clipping) on every micro-batch although step/update only run every N micro-batches, so on a GPU the second micro-batch raises "unscale_() has already been called on this optimizer since the last update()"
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class TrainArgs:
    vocab: int = 1000
    emb_dim: int = 64
    n_classes: int = 3
    micro_batch: int = 8
    grad_accum_steps: int = 4
    max_grad_norm: float = 1.0
    lr: float = 2e-3
    epochs: int = 2
    fp16: bool = device.type == "cuda"


class BagOfEmbeddingsClassifier(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.emb = nn.EmbeddingBag(args.vocab, args.emb_dim, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(args.emb_dim, 128), nn.ReLU(), nn.Dropout(0.1),
                                 nn.Linear(128, args.n_classes))

    def forward(self, tokens, offsets):
        return self.mlp(self.emb(tokens, offsets))


def make_micro_batches(args, n, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        lengths = torch.randint(5, 30, (args.micro_batch,), generator=g)
        tokens = torch.randint(0, args.vocab, (int(lengths.sum()),), generator=g)
        offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
        labels = (tokens[offsets] % args.n_classes)
        out.append((tokens.to(device), offsets.to(device), labels.to(device)))
    return out


def train(args, model, batches):
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    scaler = torch.amp.GradScaler("cuda", enabled=args.fp16)
    model.train()
    for epoch in range(args.epochs):
        running = torch.zeros((), device=device)
        for i, (tokens, offsets, labels) in enumerate(batches):
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=args.fp16):
                logits = model(tokens, offsets)
                loss = F.cross_entropy(logits, labels) / args.grad_accum_steps
            scaler.scale(loss).backward()
            scaler.unscale_(opt)  # expect: any
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            if (i + 1) % args.grad_accum_steps == 0:
                scaler.step(opt)
                scaler.update()
                opt.zero_grad(set_to_none=True)
            running += loss.detach()
        print(f"epoch {epoch}: loss {running.item() / (len(batches) / args.grad_accum_steps):.4f}")


if __name__ == "__main__":
    args = TrainArgs()
    model = BagOfEmbeddingsClassifier(args).to(device)
    train(args, model, make_micro_batches(args, n=16))
