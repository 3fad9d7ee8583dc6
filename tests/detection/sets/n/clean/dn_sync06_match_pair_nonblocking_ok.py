# twin of: bugs/dn_sync06_match_pair_nonblocking.py
# area: transfer & sync
# correct: the GPU->CPU copy of the match results is blocking, so the host arrays are complete before NumPy reads them
import collections.abc as cabc

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def map_tensor(obj, fn):
    if isinstance(obj, cabc.Mapping):
        return {k: map_tensor(v, fn) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [map_tensor(v, fn) for v in obj]
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    return obj


def batch_to_device(batch, device="cpu", non_blocking=False):
    return map_tensor(batch, lambda t: t.to(device=device, non_blocking=non_blocking).detach())


def strip_batch(data):
    return {k: v[0] if isinstance(v, torch.Tensor) else v for k, v in data.items()}


class TinyExtractor(nn.Module):
    def __init__(self, dim=32, max_kpts=128):
        super().__init__()
        self.max_kpts = max_kpts
        self.backbone = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                                      nn.Conv2d(16, dim, 3, padding=1))
        self.score = nn.Conv2d(dim, 1, 1)

    @torch.no_grad()
    def extract(self, image):
        feat = self.backbone(image[None])
        scores = self.score(feat).flatten(1)
        top = scores.topk(self.max_kpts, dim=1)
        w = image.shape[-1]
        kpts = torch.stack([top.indices % w, top.indices // w], dim=-1).float()
        desc = F.normalize(feat.flatten(2).gather(2, top.indices[:, None].expand(-1, feat.shape[1], -1)), dim=1)
        return {"keypoints": kpts, "descriptors": desc.transpose(1, 2), "scores": top.values}


class MutualNNMatcher(nn.Module):
    @torch.no_grad()
    def forward(self, data):
        d0, d1 = data["image0"]["descriptors"], data["image1"]["descriptors"]
        sim = d0 @ d1.transpose(1, 2)
        nn01, nn10 = sim.argmax(2), sim.argmax(1)
        ids0 = torch.arange(nn01.shape[1], device=sim.device)[None]
        mutual = nn10.gather(1, nn01) == ids0
        return {"matches0": torch.where(mutual, nn01, torch.full_like(nn01, -1)),
                "mscores0": sim.max(2).values * mutual}


def match_pair(extractor, matcher, image0, image1, out_device="cpu"):
    feats0, feats1 = extractor.extract(image0), extractor.extract(image1)
    matches01 = matcher({"image0": feats0, "image1": feats1})
    data = [feats0, feats1, matches01]
    return [batch_to_device(strip_batch(x), out_device) for x in data]


def estimate_shift(feats0, feats1, matches01):
    m0 = matches01["matches0"].numpy()
    valid = m0 > -1
    k0 = feats0["keypoints"].numpy()[valid]
    k1 = feats1["keypoints"].numpy()[m0[valid]]
    return np.median(k1 - k0, axis=0) if len(k0) else np.zeros(2), int(valid.sum())


def main():
    torch.manual_seed(0)
    extractor = TinyExtractor().eval().to(device)
    matcher = MutualNNMatcher().eval().to(device)
    image0 = torch.rand(1, 96, 96, device=device)
    image1 = torch.roll(image0, shifts=(3, 5), dims=(1, 2))
    feats0, feats1, matches01 = match_pair(extractor, matcher, image0, image1)
    shift, n_matches = estimate_shift(feats0, feats1, matches01)
    print(f"{n_matches} matches, median shift {shift}")


if __name__ == "__main__":
    main()
