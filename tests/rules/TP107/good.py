import torch

state = torch.load("model.pt", map_location="cpu")
other = torch.load("model.pt", "cpu")

# a cache this file writes from NumPy arrays holds no device tensor
import numpy as np

cache = "features.pt"
features = {"mean": np.zeros(4, dtype=np.float32), "ids": np.arange(10), "name": "train"}
torch.save(features, cache)
loaded = torch.load(cache, weights_only=False)
table = np.linspace(0.0, 1.0, 5)
torch.save([table, torch.zeros(2)], "table.pt")
rows = torch.load("table.pt")


# host copies written and read back by the same file
def snapshot(model, path):
    torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, path)
    return torch.load(path)


def unpack(buffer, device):
    return {"weight": buffer.to(device)}


def roundtrip(buffer, path):
    host_state = unpack(buffer, torch.device("cpu"))
    torch.save(host_state, path)
    return torch.load(path)
