# twin of: bugs/amp13_custom_function_without_custom_fwd.py
# area: AMP
# correct: forward runs in float32 (custom_fwd with cast_inputs) and backward replays forward's autocast state (custom_bwd), so every matmul sees one dtype
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"


class LinearAttentionFn(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)
    def forward(ctx, q, k, v):
        kv = k.transpose(1, 2) @ v
        ctx.save_for_backward(q, k, v, kv)
        return q @ kv

    @staticmethod
    @torch.amp.custom_bwd(device_type="cuda")
    def backward(ctx, grad_out):
        q, k, v, kv = ctx.saved_tensors
        grad_q = grad_out @ kv.transpose(1, 2)
        grad_kv = q.transpose(1, 2) @ grad_out
        grad_k = v @ grad_kv.transpose(1, 2)
        grad_v = k @ grad_kv
        return grad_q, grad_k, grad_v


class LinearAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.norm = nn.LayerNorm(3 * dim)  # normalized q/k/v: float32 even under autocast
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = self.norm(self.qkv(x)).chunk(3, dim=-1)
        q, k = F.elu(q) + 1, F.elu(k) + 1
        return self.out(LinearAttentionFn.apply(q, k, v) / x.size(1))


model = nn.Sequential(LinearAttention(32), nn.GELU(), nn.Linear(32, 1)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cuda", enabled=use_amp)

for step in range(20):
    x = torch.randn(8, 16, 32, device=device)
    y = x.mean(dim=(1, 2))
    with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=use_amp):
        loss = F.mse_loss(model(x).mean(dim=(1, 2)), y)
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    if step % 5 == 0:
        print(f"step {step} loss {loss.item():.4f}")
