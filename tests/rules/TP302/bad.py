import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(4, 4).double().to(device)
w = torch.zeros(4, dtype=torch.float64, device=device)

torch.set_default_dtype(torch.float64)
