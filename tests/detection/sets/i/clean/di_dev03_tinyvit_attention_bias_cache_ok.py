# twin of: bugs/di_dev03_tinyvit_attention_bias_cache.py
# area: device placement
# correct: the eval-time attention-bias cache is registered as a non-persistent buffer, so the later .to(device) moves it with the model
import itertools
import torch
import torch.nn as nn


class WindowAttention(nn.Module):
    def __init__(self, dim, num_heads, resolution):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        points = list(itertools.product(range(resolution), range(resolution)))
        offsets, idxs = {}, []
        for p1 in points:
            for p2 in points:
                off = (abs(p1[0] - p2[0]), abs(p1[1] - p2[1]))
                if off not in offsets:
                    offsets[off] = len(offsets)
                idxs.append(offsets[off])
        n = len(points)
        self.attention_biases = nn.Parameter(torch.zeros(num_heads, len(offsets)))
        self.register_buffer("attention_bias_idxs", torch.LongTensor(idxs).view(n, n), persistent=False)

    @torch.no_grad()
    def train(self, mode=True):
        super().train(mode)
        if mode and hasattr(self, "ab"):
            del self.ab
        else:
            self.register_buffer("ab", self.attention_biases[:, self.attention_bias_idxs], persistent=False)
        return self

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        bias = self.attention_biases[:, self.attention_bias_idxs] if self.training else self.ab
        attn = (q @ k.transpose(-2, -1)) * self.scale + bias
        out = attn.softmax(dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(b, n, c))


class TinyBlock(nn.Module):
    def __init__(self, dim, num_heads, resolution):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, num_heads, resolution)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim * 4), nn.GELU(), nn.Linear(dim * 4, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyViT(nn.Module):
    def __init__(self, num_classes=10, dim=64, depth=2, heads=4, img_size=32, patch=4):
        super().__init__()
        res = img_size // patch
        self.patch_embed = nn.Conv2d(3, dim, patch, patch)
        self.blocks = nn.Sequential(*[TinyBlock(dim, heads, res) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = self.blocks(x)
        return self.head(self.norm(x).mean(dim=1))


def load_for_inference(device):
    model = TinyViT()
    model.eval()
    return model.to(device)


@torch.no_grad()
def classify(model, loader_batches):
    preds = []
    for images in loader_batches:
        preds.append(model(images).argmax(dim=-1))
    return torch.cat(preds)


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = load_for_inference(device)
    batches = [torch.randn(8, 3, 32, 32, device=device) for _ in range(4)]
    labels = classify(model, batches)
    print("predicted class histogram:", torch.bincount(labels, minlength=10).tolist())
