import torch

state = torch.load("model.pt")
