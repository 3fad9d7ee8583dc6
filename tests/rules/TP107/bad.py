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


def save_async(model, path):
    import threading

    writer = threading.Thread(target=torch.save, args=(model.state_dict(), path))
    writer.start()
    writer.join()
    return torch.load(path)  # the state dict may hold device tensors
