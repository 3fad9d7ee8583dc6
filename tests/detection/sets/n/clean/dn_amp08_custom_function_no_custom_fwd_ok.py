# twin of: bugs/dn_amp08_custom_function_no_custom_fwd.py
# area: AMP
# correct: custom_fwd(cast_inputs=float32) runs the Function's forward in fp32 with autocast off and custom_bwd runs backward under the same state, so the dtypes in backward match
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RandomFeatureProjection(torch.autograd.Function):
    """relu(x @ omega) with a backward that only keeps the sign mask (saves memory)."""

    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)
    def forward(ctx, x, omega):
        proj = x @ omega
        mask = proj > 0
        ctx.save_for_backward(mask, omega)
        return proj * mask

    @staticmethod
    @torch.amp.custom_bwd(device_type="cuda")
    def backward(ctx, grad_out):
        mask, omega = ctx.saved_tensors
        grad_x = (grad_out * mask) @ omega.t()
        return grad_x, None


class LinearAttention(nn.Module):
    def __init__(self, dim, heads=4, n_features=64, eps=1e-6):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.eps = eps
        self.qkv = nn.Linear(dim, dim * 3)
        self.out = nn.Linear(dim, dim)
        omega = torch.randn(self.head_dim, n_features) / math.sqrt(self.head_dim)
        self.register_buffer("omega", omega)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        phi_q = RandomFeatureProjection.apply(q, self.omega)
        phi_k = RandomFeatureProjection.apply(k, self.omega)
        kv = torch.einsum("bhnf,bhnd->bhfd", phi_k, v)
        z = 1.0 / (torch.einsum("bhnf,bhf->bhn", phi_q, phi_k.sum(dim=2)) + self.eps)
        out = torch.einsum("bhnf,bhfd,bhn->bhnd", phi_q, kv, z)
        return self.out(out.transpose(1, 2).reshape(b, n, c))


class SeqClassifier(nn.Module):
    def __init__(self, vocab=500, dim=64, depth=2, classes=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(LinearAttention(dim) for _ in range(depth))
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(depth))
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        h = self.embed(tokens)
        for attn, norm in zip(self.layers, self.norms):
            h = h + attn(norm(h))
        return self.head(h.mean(1))


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model = SeqClassifier().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    tokens = torch.randint(0, 500, (64, 128))
    labels = torch.randint(0, 3, (64,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(tokens, labels), batch_size=16,
                                         shuffle=True, pin_memory=use_amp)
    for epoch in range(2):
        for tok, y in loader:
            tok, y = tok.to(device, non_blocking=True), y.to(device, non_blocking=True)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
                logits = model(tok)
                loss = F.cross_entropy(logits, y)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
    print("last loss:", loss.item())


if __name__ == "__main__":
    main()
