# source: https://github.com/hiyouga/LlamaFactory/issues/1233
# area: dtype
# bug: the "stable" LayerNorm wrapper returns its output upcast to float32, so in the half-precision GPU model the next fp16 Linear receives a float32 input and fails with a Float/Half dtype mismatch
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
half = device.type == "cuda"


class StableLayerNorm(nn.LayerNorm):
    """Runs the normalisation in float32 for numerical stability."""

    def forward(self, x):
        input_dtype = x.dtype
        out = F.layer_norm(x.float(), self.normalized_shape, self.weight.float(), self.bias.float(), self.eps)
        return out.to(input_dtype).to(torch.float32)  # expect: any


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, r=4, alpha=8):
        super().__init__()
        self.base = base
        for p in self.base.parameters():
            p.requires_grad_(False)
        self.lora_a = nn.Parameter(torch.randn(r, base.in_features) * 0.01)
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, r))
        self.scale = alpha / r

    def forward(self, x):
        delta = (x.to(self.lora_a.dtype) @ self.lora_a.t()) @ self.lora_b.t()
        return self.base(x) + (delta * self.scale).to(x.dtype)


class Block(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.ln = StableLayerNorm(dim)
        self.up = LoRALinear(nn.Linear(dim, 4 * dim))
        self.down = nn.Linear(4 * dim, dim)
        self.down.requires_grad_(False)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.ln(x))))


class Classifier(nn.Module):
    def __init__(self, vocab=500, dim=64, depth=2, classes=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.emb.requires_grad_(False)
        self.blocks = nn.Sequential(*[Block(dim) for _ in range(depth)])
        self.score = nn.Linear(dim, classes)

    def forward(self, ids):
        pooled = self.blocks(self.emb(ids)).mean(1)
        return self.score(pooled.to(self.score.weight.dtype))


def prepare_model():
    model = Classifier()
    if half:
        model = model.half()
        for name, p in model.named_parameters():
            if p.requires_grad:
                p.data = p.data.float()
    return model.to(device)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = prepare_model()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    for step in range(5):
        ids = torch.randint(0, 500, (8, 24), device=device)
        labels = torch.randint(0, 3, (8,), device=device)
        loss = F.cross_entropy(model(ids).float(), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    print("loss", round(loss.item(), 4))
