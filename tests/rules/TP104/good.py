import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
mask = torch.ones(16, 16, device=device)
half = torch.ones(16).to(torch.float16)
x = torch.zeros(4).to(device, non_blocking=True)
g = torch.Generator().manual_seed(0)
noise = torch.randn(4, generator=g).to(device)  # a seeded CPU stream: drawn on the CPU
