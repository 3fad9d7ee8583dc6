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


class AsyncCheckpointer:
    """Copies the state to the host, then a thread writes it: every save holds host tensors."""

    def host_copies(self, state):
        return {k: v.detach().to("cpu", copy=True) for k, v in state.items()}

    def save(self, model, path):
        import threading

        host_state = self.host_copies(model.state_dict())
        threading.Thread(target=torch.save, args=(host_state, path)).start()
        return path


def latest(paths):
    return torch.load(paths[-1], weights_only=True)
