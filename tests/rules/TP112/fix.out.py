import torch

a = torch.Tensor(3, 4)
b = torch.tensor([1.0, 2.0], dtype=torch.float32)
c = torch.tensor([1, 2], dtype=torch.int64, device="cuda")
