import torch
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ConfusionMatrix:
    def __init__(self, n):
        self.n = n
        self.mat = torch.zeros(n, n, dtype=torch.long, device=device)

    def update(self, preds, target):
        self.mat += F.one_hot(target, self.n).T @ F.one_hot(preds, self.n)


def co_occurrence(users, items, n_users, n_items):
    inter = torch.zeros(n_users, n_items, dtype=torch.long, device=device)
    inter[users, items] = 1
    return torch.matmul(inter.t(), inter)


def resize(frames):
    x = torch.zeros(8, 3, 64, 64, dtype=torch.uint8).to(device)
    return F.interpolate(x, size=(32, 32), mode="bilinear")


def patch_votes(seg, patch, device):
    seg = seg.cuda()
    mask = (seg == 1).long().unsqueeze(1)
    return torch.nn.functional.avg_pool2d(mask, patch, divisor_override=1)


class Whitener:
    def fit(self, feats):
        _, s, v = torch.pca_lowrank(feats, q=8)
        self.proj = v / s
        return self


@torch.no_grad()
def embed(encoder, batches, device):
    with torch.autocast(device_type=device.type, dtype=torch.float16):
        feats = torch.cat([encoder(x.to(device)) for x in batches])
        return Whitener().fit(feats)
