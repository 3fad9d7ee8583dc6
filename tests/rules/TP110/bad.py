import torch

device = torch.device("cuda:1")
other = torch.device("cuda", 0)
torch.cuda.set_device(2)
x = torch.zeros(3).cuda(1)
rank_device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
