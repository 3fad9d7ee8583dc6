# source: https://github.com/pytorch/pytorch/issues/147437
# area: dtype
# bug: on the GPU the whole model (trainable adapter included) is cast to float16 and trained with Adam's default eps=1e-8, which rounds to 0 in float16, so zero-gradient entries give 0/0 = NaN after the first step
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
MODEL_DTYPE = torch.float16 if device.type == "cuda" else torch.float32


class FrozenImageEncoder(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 32, 4, stride=4), nn.GELU(),
            nn.Conv2d(32, dim, 2, stride=2), nn.GELU(),
        )

    def forward(self, x):
        return self.net(x).flatten(2).transpose(1, 2)  # B, tokens, dim


class ExtraFeatureAdapter(nn.Module):
    """New branch: queries attend over image tokens plus an extra side-feature embedding."""

    def __init__(self, dim=64, n_queries=8, n_side=32):
        super().__init__()
        self.queries = nn.Parameter(torch.randn(n_queries, dim) * 0.02)
        self.side_emb = nn.Embedding(n_side, dim)
        self.attn = nn.MultiheadAttention(dim, num_heads=4, batch_first=True)
        self.out = nn.Linear(dim, dim)

    def forward(self, tokens, side_ids):
        side = self.side_emb(side_ids)
        memory = torch.cat([tokens, side], dim=1)
        q = self.queries.unsqueeze(0).expand(tokens.shape[0], -1, -1)
        h, _ = self.attn(q, memory, memory)
        return self.out(h)


class CaptionScorer(nn.Module):
    def __init__(self, dim=64, vocab=100):
        super().__init__()
        self.encoder = FrozenImageEncoder(dim)
        self.adapter = ExtraFeatureAdapter(dim)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, images, side_ids):
        with torch.no_grad():
            tokens = self.encoder(images)
        return self.lm_head(self.adapter(tokens, side_ids))


def build(lr=1e-4):
    model = CaptionScorer().to(device=device, dtype=MODEL_DTYPE)  # expect[eps]: any
    for p in model.encoder.parameters():
        p.requires_grad_(False)
    for p in model.lm_head.parameters():
        p.requires_grad_(False)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=lr, weight_decay=0.01)  # expect[eps]: any
    return model, optimizer


def train(steps=4):
    torch.manual_seed(0)
    model, optimizer = build()
    losses = torch.zeros(steps, device=device)
    for step in range(steps):
        images = torch.rand(4, 3, 32, 32, device=device, dtype=MODEL_DTYPE)
        side_ids = torch.randint(0, 4, (4, 3), device=device)
        targets = torch.randint(0, 100, (4, 8), device=device)
        logits = model(images, side_ids)
        loss = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses[step] = loss.detach()
    print("losses:", [round(v, 4) for v in losses.tolist()])


if __name__ == "__main__":
    train()
