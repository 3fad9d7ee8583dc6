import torch

state = torch.load("model.pt")


def resume(model, path):
    torch.save(model.state_dict(), path)  # may hold device tensors
    return torch.load(path)


def unpack(buffer, device):
    return {"weight": buffer.to(device)}


def roundtrip(buffer, path, device):
    state = unpack(buffer, device)
    torch.save(state, path)
    return torch.load(path)
