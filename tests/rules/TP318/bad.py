import torch

EPS = 1e-15


def link_loss(pos, neg):
    with torch.autocast("cuda", dtype=torch.float16):
        return -torch.log(pos + EPS).mean() - torch.log(1 - neg + EPS).mean()


def normalise(scores):
    mn, mx = scores.min(), scores.max()
    return (scores - mn) / (mx - mn + 1e-8)


class Descriptor(torch.nn.Module):
    def __init__(self, eps=1e-10):
        super().__init__()
        self.eps = eps

    def forward(self, desc):
        return desc / (desc.norm(dim=1, keepdim=True) + self.eps)


def embed(encoder, ids):
    vectors = encoder.half()(ids)
    return torch.nn.functional.normalize(vectors, dim=-1)  # default eps 1e-12


def normalize_quaternion(q, eps=1e-12):
    return q.half() / q.half().norm(dim=-1, keepdim=True).clamp_min(eps)


def unit_quaternion(q, eps=1e-12):
    return torch.nn.functional.normalize(q.half(), dim=-1, eps=eps)
