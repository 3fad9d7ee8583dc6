# source: https://github.com/lightonai/pylate/pull/240
# area: dtype
# bug: the min-max normalisation guard 1e-8 is below the float16 subnormal range, so under CUDA fp16 autocast it rounds to 0 and groups with equal student scores divide 0/0 into NaN
import torch
import torch.nn as nn
import torch.nn.functional as F


class LateInteractionEncoder(nn.Module):
    def __init__(self, vocab=1000, dim=64, out_dim=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim, padding_idx=0)
        self.layer = nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True)
        self.proj = nn.Linear(dim, out_dim, bias=False)

    def forward(self, ids):
        mask = ids == 0
        h = self.layer(self.emb(ids), src_key_padding_mask=mask)
        return F.normalize(self.proj(h), dim=-1) * (~mask).unsqueeze(-1)


def maxsim(q, d):
    # q: (B, Lq, D), d: (B, N, Ld, D) -> (B, N)
    sim = torch.einsum("bqh,bndh->bnqd", q, d)
    return sim.max(dim=-1).values.mean(dim=-1)


class DistillationLoss(nn.Module):
    def __init__(self, normalize_scores=True):
        super().__init__()
        self.normalize_scores = normalize_scores
        self.epsilon = 1e-8  # expect[w]: any

    def _minmax(self, s):
        lo = s.min(dim=1, keepdim=True).values
        hi = s.max(dim=1, keepdim=True).values
        return (s - lo) / (hi - lo + self.epsilon)  # expect[w]: any

    def forward(self, student, teacher):
        if self.normalize_scores:
            student, teacher = self._minmax(student), self._minmax(teacher)
        return F.kl_div(F.log_softmax(student, dim=1), F.log_softmax(teacher, dim=1),
                        reduction="batchmean", log_target=True)


def make_batch(batch, n_docs, lq, ld, device, vocab=1000):
    q = torch.randint(1, vocab, (batch, lq), device=device)
    d = torch.randint(1, vocab, (batch, n_docs, ld), device=device)
    teacher = torch.randn(batch, n_docs, device=device)
    d[0, 1:] = d[0, :1]
    teacher[0, 1:] = teacher[0, :1]
    return q, d, teacher


def train(steps=3, batch=4, n_docs=4, lq=8, ld=16):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model = LateInteractionEncoder().to(device)
    loss_fn = DistillationLoss()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    history = []
    for _ in range(steps):
        q_ids, d_ids, teacher = make_batch(batch, n_docs, lq, ld, device)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            q = model(q_ids)
            d = model(d_ids.flatten(0, 1)).view(batch, n_docs, ld, -1)
            loss = loss_fn(maxsim(q, d), teacher)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        history.append(loss.detach())
    return torch.stack(history)


if __name__ == "__main__":
    torch.manual_seed(0)
    losses = train()
    print("losses:", [round(v, 5) for v in losses.tolist()])
