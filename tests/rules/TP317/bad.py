import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
dtype = torch.float16 if device.type == "cuda" else torch.float32


def attend(scores, pad):
    scores = scores.masked_fill(pad, -1e9)
    return scores.softmax(-1)


def blank(x, keep):
    x.masked_fill_(~keep, -100000)
    return x


def ceiling(t):
    return t.fill_(1e5)


class MaskedAttention(torch.nn.Module):
    def __init__(self, mask_value=-1e8):
        super().__init__()
        self.mask_value = mask_value

    def forward(self, scores, pad):
        return scores.masked_fill(pad, self.mask_value).softmax(-1)
