import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
SHARED = torch.Generator().manual_seed(7)


def add_noise(x, generator):
    # the generator comes from the caller below: a CPU one
    return x + torch.randn(x.shape, generator=generator, device=x.device)


def init_noise(shape, gen=torch.Generator()):
    return torch.randn(shape, generator=gen, device=device)


class Dropper(nn.Module):
    def __init__(self):
        super().__init__()
        self.gen = torch.Generator(device="cpu")

    def forward(self, x):
        keep = torch.rand(x.shape, generator=self.gen, device=x.device) > 0.1
        return x * keep


def train():
    gen = torch.Generator()
    gen.manual_seed(0)
    x = torch.randn(8, 4, device=device)
    idx = torch.randperm(8, generator=gen, device=device)
    x = add_noise(x[idx], gen)
    probs = torch.softmax(x.to(device), -1)
    tokens = torch.multinomial(probs, 1, generator=gen)
    w = torch.empty(4, 4).to(device)
    w.normal_(generator=SHARED)
    t = torch.randint(0, 10, (8,), generator=SHARED, device="cuda")

    def jitter():
        return torch.randn(4, generator=gen, device=device)

    return tokens, w, t, jitter(), init_noise((2, 2)), torch.randn_like(w, generator=SHARED)


def init_weights(shape):
    generator = torch.manual_seed(123)
    w = torch.zeros(shape, device=device)
    w.uniform_(-1.0, 1.0, generator=generator)
    return w


class Jitter:
    def __init__(self, sigma, generator):
        self.sigma = sigma
        self.generator = generator

    def __call__(self, points):
        return points + self.sigma * torch.randn(
            points.shape, generator=self.generator, device="cuda"
        )


jitter = Jitter(0.01, torch.Generator().manual_seed(0))
