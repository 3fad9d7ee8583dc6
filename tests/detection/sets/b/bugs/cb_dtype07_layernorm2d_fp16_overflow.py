# source: https://github.com/facebookresearch/ConvNeXt/issues/80
# area: dtype
# bug: the channels-first LayerNorm computes (x - u).pow(2) in the input dtype, so in fp16 GPU inference large activations overflow to inf and the network outputs garbage
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
fp16_inference = device.type == "cuda"


class LayerNorm2d(nn.Module):
    """LayerNorm over the channel dim of an NCHW tensor."""

    def __init__(self, channels, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.eps = eps

    def forward(self, x):
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)  # expect: any
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = LayerNorm2d(dim)
        self.pw1 = nn.Conv2d(dim, 4 * dim, 1)
        self.pw2 = nn.Conv2d(4 * dim, dim, 1)

    def forward(self, x):
        return x + self.pw2(F.gelu(self.pw1(self.norm(self.dwconv(x)))))


class TinyConvNeXt(nn.Module):
    def __init__(self, dims=(16, 32, 64), n_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, dims[0], 4, stride=4), LayerNorm2d(dims[0]))
        stages = []
        for i, d in enumerate(dims):
            if i > 0:
                stages.append(nn.Sequential(LayerNorm2d(dims[i - 1]), nn.Conv2d(dims[i - 1], d, 2, stride=2)))
            stages.append(Block(d))
        self.stages = nn.Sequential(*stages)
        self.head = nn.Linear(dims[-1], n_classes)

    def forward(self, x):
        x = self.stages(self.stem(x))
        return self.head(x.mean(dim=(2, 3)))


@torch.no_grad()
def classify(model, images, batch_size=4):
    dtype = next(model.parameters()).dtype
    out = []
    for i in range(0, len(images), batch_size):
        x = images[i:i + batch_size].to(device, dtype=dtype)
        out.append(model(x).float().softmax(-1).cpu())
    return torch.cat(out)


if __name__ == "__main__":
    model = TinyConvNeXt().to(device).eval()
    if fp16_inference:
        model.half()
    # raw 12-bit sensor tiles (0-4095); the checkpoint was trained without normalisation
    images = torch.randint(0, 4096, (8, 3, 32, 32)).float()
    probs = classify(model, images)
    print("top-1:", probs.argmax(-1).tolist(), "finite:", bool(torch.isfinite(probs).all()))
