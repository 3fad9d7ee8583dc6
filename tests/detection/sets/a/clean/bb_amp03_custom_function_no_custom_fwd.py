# twin of: bugs/bb_amp03_custom_function_no_custom_fwd.py
# area: AMP
# correct: forward/backward are decorated with torch.amp.custom_fwd/custom_bwd(device_type="cuda"), so backward runs under the same autocast state as forward and its matmuls get matching dtypes
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"


class MaskedLinearFn(torch.autograd.Function):
    """Linear with a fixed pruning mask; pruned weights receive exactly zero gradient."""

    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda")
    def forward(ctx, x, weight, mask):
        ctx.save_for_backward(x, weight, mask)
        return x.matmul((weight * mask).t())

    @staticmethod
    @torch.amp.custom_bwd(device_type="cuda")
    def backward(ctx, grad_out):
        x, weight, mask = ctx.saved_tensors
        grad_x = grad_out.matmul(weight * mask)
        flat_g = grad_out.reshape(-1, grad_out.size(-1))
        grad_w = flat_g.t().matmul(x.reshape(-1, x.size(-1))) * mask
        return grad_x, grad_w, None


class PrunedMLP(nn.Module):
    def __init__(self, dim, hidden, sparsity=0.5):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(hidden, dim) * dim ** -0.5)
        self.b1 = nn.Parameter(torch.zeros(hidden))
        self.register_buffer("mask1", (torch.rand(hidden, dim) > sparsity).float())
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        h = MaskedLinearFn.apply(x, self.w1, self.mask1) + self.b1
        return self.fc2(F.gelu(h))


class Block(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.mlp = PrunedMLP(dim, 4 * dim)
        self.head = nn.Linear(dim, 1)

    def forward(self, x):
        x = x + self.mlp(self.norm(x))
        return self.head(x.mean(1)).squeeze(-1)


model = Block().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cuda", enabled=use_amp)

for step in range(30):
    x = torch.randn(16, 10, 32, device=device)
    y = x.pow(2).mean(dim=(1, 2))
    with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=use_amp):
        loss = F.mse_loss(model(x), y)
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f}")
