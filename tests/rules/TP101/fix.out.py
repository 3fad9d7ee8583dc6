import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(8, 4)
x = x.to(device)
w = torch.ones(4)
w = w.cuda()
w = w.float()
