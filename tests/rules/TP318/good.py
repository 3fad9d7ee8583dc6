import torch

EPS = 1e-4


def link_loss(pos, neg):
    with torch.autocast("cuda", dtype=torch.float16):
        return -torch.log(pos + EPS).mean() - torch.log(1 - neg + EPS).mean()


def normalise(scores):
    mn, mx = scores.min(), scores.max()
    return (scores - mn) / (mx - mn + 1e-3)


def adam(params):
    return torch.optim.Adam(params, eps=1e-8)  # the optimizer's state is float32
