import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
mask = torch.ones(16, 16, device=device)
noise = torch.randn(16, device=device)
ids = torch.arange(10, device="cuda")
