# twin of: bugs/dd_dtype07_fp16_channel_norm_variance.py
# area: dtype
# correct: the channel statistics are computed in float32 and only the normalized result is cast back, so fp16 GPU inference cannot overflow the squared deviations
import torch
import torch.nn as nn


class ChannelNorm3d(nn.Module):
    """LayerNorm over the channel axis of an (N, C, D, H, W) volume."""

    def __init__(self, channels, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        mean = xf.mean(dim=1, keepdim=True)
        var = (xf - mean).pow(2).mean(dim=1, keepdim=True)
        x = ((xf - mean) / torch.sqrt(var + self.eps)).to(x.dtype)
        return x * self.weight[:, None, None, None] + self.bias[:, None, None, None]


class MeshNetLike(nn.Module):
    def __init__(self, in_ch=1, width=16, num_labels=4, dilations=(1, 2, 4, 2, 1)):
        super().__init__()
        layers = []
        ch = in_ch
        for d in dilations:
            layers += [nn.Conv3d(ch, width, 3, padding=d, dilation=d), ChannelNorm3d(width), nn.ReLU(inplace=True)]
            ch = width
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Conv3d(width, num_labels, 1)

    def forward(self, x):
        return self.classifier(self.features(x))


def synthetic_scan(size=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    zz, yy, xx = torch.meshgrid(*(torch.linspace(-1, 1, size),) * 3, indexing="ij")
    r = torch.sqrt(xx ** 2 + yy ** 2 + zz ** 2)
    scan = 1400.0 * (r < 0.8).float() - 600.0 * (r < 0.4).float()
    scan = scan + 40.0 * torch.randn(size, size, size, generator=g)
    return scan[None, None]


@torch.no_grad()
def segment(model, scan, device, dtype):
    logits = model(scan.to(device=device, dtype=dtype))
    labels = logits.float().argmax(dim=1)
    counts = torch.bincount(labels.flatten(), minlength=logits.shape[1])
    finite = torch.isfinite(logits).all()
    return counts.cpu(), bool(finite)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    model = MeshNetLike().to(device=device, dtype=dtype).eval()
    counts, finite = segment(model, synthetic_scan(), device, dtype)
    print("voxels per label:", counts.tolist(), "finite logits:", finite)


if __name__ == "__main__":
    main()
