import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
mask = torch.ones(16, 16, device=device)
half = torch.ones(16).to(torch.float16)
x = torch.zeros(4).to(device, non_blocking=True)
