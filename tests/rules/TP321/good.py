import torch
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ConfusionMatrix:
    def __init__(self, n):
        self.n = n
        self.mat = torch.zeros(n, n, dtype=torch.long, device=device)

    def update(self, preds, target):
        pairs = F.one_hot(target, self.n).T.float() @ F.one_hot(preds, self.n).float()
        self.mat += pairs.long()


def host_counts(n):
    counts = torch.ones(n, n, dtype=torch.long)  # stays on the CPU, which multiplies integers
    return counts @ counts


def ratios(total, parts):
    a = torch.ones(4, 4, dtype=torch.long, device=device)
    return (a / 2) @ (a / 3)  # true division makes floats


def resize(frames):
    x = torch.zeros(8, 3, 64, 64, dtype=torch.uint8).to(device)
    return F.interpolate(x, size=(32, 32), mode="nearest")


def patch_votes_float(seg, patch, device):
    seg = seg.cuda()
    mask = (seg == 1).float().unsqueeze(1)
    return torch.nn.functional.avg_pool2d(mask, patch, divisor_override=1).long()


class Whitener:
    def fit(self, feats):
        _, s, v = torch.pca_lowrank(feats.float(), q=8)
        self.proj = v / s
        return self


@torch.no_grad()
def embed(encoder, batches, device):
    with torch.autocast(device_type=device.type, dtype=torch.float16):
        feats = torch.cat([encoder(x.to(device)) for x in batches])
    return Whitener().fit(feats)  # outside the autocast block
