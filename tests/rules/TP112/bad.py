import torch

a = torch.Tensor(3, 4)
b = torch.FloatTensor([1.0, 2.0])
c = torch.cuda.LongTensor([1, 2])
