import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
mask = torch.ones(16, 16).to(device)
noise = torch.randn(16).to(device)
ids = torch.arange(10).cuda()
