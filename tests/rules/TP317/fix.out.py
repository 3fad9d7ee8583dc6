import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
dtype = torch.float16 if device.type == "cuda" else torch.float32


def attend(scores, pad):
    scores = scores.masked_fill(pad, torch.finfo(scores.dtype).min)
    return scores.softmax(-1)


def blank(x, keep):
    x.masked_fill_(~keep, torch.finfo(x.dtype).min)
    return x


def ceiling(t):
    return t.fill_(torch.finfo(t.dtype).max)
