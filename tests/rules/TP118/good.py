import torch
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_noise(shape, generator=None):
    return torch.randn(shape, generator=generator, device=device)


def train():
    # a generator on the device for draws on the device
    gen = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(8, 4, generator=gen, device=device)
    idx = torch.randperm(8, generator=gen, device=device)
    # a CPU generator for CPU draws: the sampler, a CPU shuffle, an explicit "cpu"
    cpu_gen = torch.Generator().manual_seed(1)
    loader = DataLoader(TensorDataset(torch.randn(8, 4)), shuffle=True, generator=cpu_gen)
    order = torch.randperm(8, generator=cpu_gen)
    mask = torch.rand(8, generator=cpu_gen, device="cpu")
    host = torch.empty(4).normal_(generator=cpu_gen)
    drawn = torch.rand(8, generator=cpu_gen, device=None)
    # drawn on the CPU and then moved: the CPU generator is right
    noise = torch.randn(8, 4, generator=cpu_gen).to(device)
    return x[idx], loader, order, mask, host, drawn, noise, make_noise((2, 2))


def init_weights(shape):
    torch.manual_seed(123)  # seeds every device; no generator passed
    w = torch.zeros(shape, device=device)
    w.uniform_(-1.0, 1.0)
    host = torch.zeros(shape).uniform_(-1.0, 1.0, generator=torch.manual_seed(1))
    return w, host
