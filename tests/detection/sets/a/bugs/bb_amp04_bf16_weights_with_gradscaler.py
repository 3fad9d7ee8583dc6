# source: https://github.com/pytorch/pytorch/issues/127176
# area: AMP
# bug: load_model casts the weights to bfloat16 when the GPU supports it, but the training loop still routes steps through an enabled GradScaler; unscaling bf16 grads fails on CUDA ("_amp_foreach_non_finite_check_and_unscale_cuda" not implemented for 'BFloat16'), and bf16 never needs loss scaling anyway
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

args = SimpleNamespace(mixed_precision=device.type == "cuda", lr=5e-4, steps=30, vocab=128, dim=64)


class RewardModel(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        layer = nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=2 * dim, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.v_head = nn.Linear(dim, 1)

    def forward(self, ids):
        h = self.encoder(self.emb(ids))
        return self.v_head(h[:, -1]).squeeze(-1)


def load_model(args):
    model = RewardModel(args.vocab, args.dim).to(device)
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        model = model.to(torch.bfloat16)  # expect[bf16]: any
    return model


def pairwise_loss(chosen, rejected):
    return -F.logsigmoid(chosen.float() - rejected.float()).mean()


model = load_model(args)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
scaler = torch.amp.GradScaler("cuda", enabled=args.mixed_precision)  # expect[bf16]: any

for step in range(args.steps):
    chosen_ids = torch.randint(0, args.vocab, (8, 24), device=device)
    rejected_ids = torch.randint(0, args.vocab, (8, 24), device=device)
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=args.mixed_precision):
        loss = pairwise_loss(model(chosen_ids), model(rejected_ids))
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f}")
