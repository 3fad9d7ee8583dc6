import torch

state = torch.load("model.pt")


def resume(model, path):
    torch.save(model.state_dict(), path)  # may hold device tensors
    return torch.load(path)
