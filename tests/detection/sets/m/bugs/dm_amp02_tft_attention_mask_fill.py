# source: https://github.com/unit8co/darts/issues/3081
# area: AMP
# bug: under float16 autocast on a GPU the attention scores are half, and masked_fill(-1e9) overflows float16 and raises
import math
import torch
import torch.nn as nn
from dataclasses import dataclass


@dataclass
class ForecastConfig:
    input_chunk_length: int = 24
    output_chunk_length: int = 6
    n_features: int = 5
    hidden_size: int = 32
    num_heads: int = 4
    precision: str = "16-mixed"
    epochs: int = 2
    lr: float = 1e-3


class ScaledDotProductAttention(nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, q, k, v, mask=None):
        attn = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(k.shape[-1])
        if mask is not None:
            attn = attn.masked_fill(mask, -1e9)  # expect: any
        attn = self.dropout(torch.softmax(attn, dim=-1))
        return torch.bmm(attn, v), attn


class InterpretableMultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head = n_head
        self.d_k = d_model // n_head
        self.q_layers = nn.ModuleList([nn.Linear(d_model, self.d_k) for _ in range(n_head)])
        self.k_layers = nn.ModuleList([nn.Linear(d_model, self.d_k) for _ in range(n_head)])
        self.v_layer = nn.Linear(d_model, self.d_k)
        self.attention = ScaledDotProductAttention()
        self.w_h = nn.Linear(self.d_k, d_model)

    def forward(self, x, mask):
        v = self.v_layer(x)
        heads = []
        for ql, kl in zip(self.q_layers, self.k_layers):
            out, _ = self.attention(ql(x), kl(x), v, mask)
            heads.append(out)
        return self.w_h(torch.stack(heads, dim=0).mean(dim=0))


class TinyTFT(nn.Module):
    def __init__(self, cfg: ForecastConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = nn.LSTM(cfg.n_features, cfg.hidden_size, batch_first=True)
        self.attn = InterpretableMultiHeadAttention(cfg.hidden_size, cfg.num_heads)
        self.norm = nn.LayerNorm(cfg.hidden_size)
        self.head = nn.Linear(cfg.hidden_size, 1)

    def forward(self, x):
        h, _ = self.encoder(x)
        t = h.shape[1]
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=1)
        causal = causal.unsqueeze(0).expand(x.shape[0], t, t)
        h = self.norm(h + self.attn(h, causal))
        return self.head(h[:, -self.cfg.output_chunk_length:]).squeeze(-1)


def synthetic_series(cfg, n=256, device="cpu"):
    t = torch.arange(n + cfg.input_chunk_length, device=device, dtype=torch.float32)
    base = torch.sin(t / 6.0)
    feats = torch.stack([base.roll(i) for i in range(cfg.n_features)], dim=-1)
    idx = torch.arange(cfg.input_chunk_length, device=device)
    windows = feats[idx.unsqueeze(0) + torch.arange(n - cfg.output_chunk_length, device=device).unsqueeze(1)]
    targets = windows[:, -cfg.output_chunk_length:, 0].roll(-1, dims=1)
    return windows, targets


def fit(model, cfg, device):
    use_amp = cfg.precision == "16-mixed" and device.type == "cuda"
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    scaler = torch.amp.GradScaler(device.type, enabled=use_amp)
    x_all, y_all = synthetic_series(cfg, device=device)
    for epoch in range(cfg.epochs):
        total = torch.zeros((), device=device)
        for i in range(0, x_all.shape[0], 32):
            x, y = x_all[i:i + 32], y_all[i:i + 32]
            opt.zero_grad(set_to_none=True)
            with torch.autocast(device.type, dtype=torch.float16, enabled=use_amp):
                loss = nn.functional.mse_loss(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            total += loss.detach().float()
        print(f"epoch {epoch}: summed loss {total.item():.3f}")


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = ForecastConfig()
    fit(TinyTFT(cfg).to(device), cfg, device)
