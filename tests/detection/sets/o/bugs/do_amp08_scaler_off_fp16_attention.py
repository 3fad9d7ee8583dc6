# source: https://github.com/soda-inria/tabicl/issues/153
# area: AMP
# bug: the GradScaler is only enabled when the autocast dtype is float16, but on the GPU the fast attention path casts float32 q/k/v to float16 anyway, so its backward runs in fp16 without loss scaling and small gradients underflow to zero
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class PretrainConfig:
    dtype: str = "float32"
    amp: bool = True
    use_fast_attn: bool = True
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    lr: float = 1e-3
    steps: int = 8


def fast_attention(q, k, v, use_fast_attn):
    orig_dtype = q.dtype
    if use_fast_attn and q.is_cuda:
        attn_dtype = orig_dtype if orig_dtype in (torch.float16, torch.bfloat16) else torch.float16  # expect[fa]: any
        out = F.scaled_dot_product_attention(q.to(attn_dtype), k.to(attn_dtype), v.to(attn_dtype))
        return out.to(orig_dtype)
    return F.scaled_dot_product_attention(q, k, v)


class RowAttentionBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.h = cfg.n_heads
        self.use_fast_attn = cfg.use_fast_attn
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)
        self.norm1 = nn.LayerNorm(cfg.d_model)
        self.norm2 = nn.LayerNorm(cfg.d_model)
        self.ff = nn.Sequential(nn.Linear(cfg.d_model, 2 * cfg.d_model), nn.GELU(), nn.Linear(2 * cfg.d_model, cfg.d_model))

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, n, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        a = fast_attention(q, k, v, self.use_fast_attn).transpose(1, 2).reshape(b, n, d)
        x = x + self.out(a)
        return x + self.ff(self.norm2(x))


class TabularICL(nn.Module):
    def __init__(self, cfg, n_features=10, n_classes=3):
        super().__init__()
        self.embed = nn.Linear(n_features + 1, cfg.d_model)
        self.blocks = nn.ModuleList([RowAttentionBlock(cfg) for _ in range(cfg.n_layers)])
        self.head = nn.Linear(cfg.d_model, n_classes)

    def forward(self, x, y_ctx):
        y_in = torch.cat([y_ctx.float(), torch.full_like(x[:, y_ctx.shape[1]:, 0], -1.0)], dim=1)
        h = self.embed(torch.cat([x, y_in.unsqueeze(-1)], dim=-1))
        for blk in self.blocks:
            h = blk(h)
        return self.head(h[:, y_ctx.shape[1]:])


class PretrainRunner:
    def __init__(self, cfg):
        self.cfg = cfg
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.amp_dtype = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}[cfg.dtype]
        self.amp = cfg.amp and self.device.type == "cuda"
        self.model = TabularICL(cfg).to(self.device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.amp and self.amp_dtype == torch.float16)  # expect[fa]: any

    def sample_prior_batch(self, b=8, n=48, n_ctx=32):
        x = torch.randn(b, n, 10, device=self.device)
        y = (x[..., 0] + 0.5 * x[..., 1] > 0).long() + (x[..., 2] > 1).long()
        return x, y[:, :n_ctx], y[:, n_ctx:]

    def run(self):
        losses = torch.zeros(self.cfg.steps, device=self.device)
        for step in range(self.cfg.steps):
            x, y_ctx, y_qry = self.sample_prior_batch()
            with torch.autocast(device_type=self.device.type, dtype=self.amp_dtype,
                                enabled=self.amp and self.amp_dtype != torch.float32):
                logits = self.model(x, y_ctx)
                loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y_qry.reshape(-1))
            self.optimizer.zero_grad(set_to_none=True)
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(self.optimizer)
            nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.scaler.step(self.optimizer)
            self.scaler.update()
            losses[step] = loss.detach()
        print("prior loss start/end:", losses[:3].mean().item(), losses[-3:].mean().item())


if __name__ == "__main__":
    PretrainRunner(PretrainConfig()).run()
