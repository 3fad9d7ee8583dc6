# source: https://github.com/pytorch/pytorch/issues/47906
# area: AMP
# bug: the hand-written autograd Function has no custom_fwd/custom_bwd; under CUDA autocast forward produces fp16 activations but backward runs outside autocast and multiplies the fp16 grad by the saved fp32 weight, failing with a Half/Float dtype mismatch
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class FusedDenseGelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias):  # expect[fn]: any
        pre = F.linear(x, weight, bias)
        ctx.save_for_backward(x, weight, pre)
        return F.gelu(pre)

    @staticmethod
    def backward(ctx, grad_out):  # expect[fn]: any
        x, weight, pre = ctx.saved_tensors
        cdf = 0.5 * (1.0 + torch.erf(pre / math.sqrt(2.0)))
        pdf = torch.exp(-0.5 * pre * pre) / math.sqrt(2.0 * math.pi)
        grad_pre = grad_out * (cdf + pre * pdf)
        grad_x = grad_pre.matmul(weight)
        grad_w = grad_pre.reshape(-1, grad_pre.shape[-1]).t().matmul(x.reshape(-1, x.shape[-1]))
        grad_b = grad_pre.reshape(-1, grad_pre.shape[-1]).sum(0)
        return grad_x, grad_w, grad_b


class FusedMLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(FusedDenseGelu.apply(x, self.fc1.weight, self.fc1.bias))


class TinyEncoder(nn.Module):
    def __init__(self, vocab=256, dim=64, heads=4, layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.attn = nn.ModuleList([nn.MultiheadAttention(dim, heads, batch_first=True) for _ in range(layers)])
        self.mlp = nn.ModuleList([FusedMLP(dim, 4 * dim) for _ in range(layers)])
        self.ln = nn.ModuleList([nn.LayerNorm(dim) for _ in range(2 * layers)])
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        h = self.tok(ids)
        for i, (attn, mlp) in enumerate(zip(self.attn, self.mlp)):
            a = self.ln[2 * i](h)
            h = h + attn(a, a, a, need_weights=False)[0]
            h = h + mlp(self.ln[2 * i + 1](h))
        return self.head(h)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model = TinyEncoder().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    for step in range(3):
        ids = torch.randint(0, 256, (4, 32), device=device)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            logits = model(ids[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    print("loss", loss.item())


if __name__ == "__main__":
    main()
