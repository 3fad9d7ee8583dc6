# twin of: bugs/dm_sync07_async_ckpt_nonblocking_d2h.py
# area: transfer & sync
# correct: after issuing the non-blocking device-to-host copies the checkpointer synchronises once, so the writer thread only sees completed host tensors
import os
import tempfile
import threading

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def flatten_state(prefix, obj, out):
    if isinstance(obj, dict):
        for k, v in obj.items():
            flatten_state(f"{prefix}{k}.", v, out)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            flatten_state(f"{prefix}{i}.", v, out)
    else:
        out[prefix[:-1]] = obj
    return out


class AsyncCheckpointer:
    def __init__(self, directory, device):
        self.directory = directory
        self.device = device
        self._writer = None

    def preload_tensors(self, flat_state):
        host = {}
        for key, value in flat_state.items():
            if torch.is_tensor(value):
                host[key] = value.detach().to("cpu", non_blocking=True, copy=True)
            else:
                host[key] = value
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return host

    def save(self, step, model, optimizer):
        self.wait()
        flat = flatten_state("", {"model": model.state_dict(),
                                  "optimizer": optimizer.state_dict(),
                                  "step": step}, {})
        host_state = self.preload_tensors(flat)
        path = os.path.join(self.directory, f"iter_{step:07d}.pt")
        self._writer = threading.Thread(target=torch.save, args=(host_state, path))
        self._writer.start()
        return path

    def wait(self):
        if self._writer is not None:
            self._writer.join()
            self._writer = None


def train(model, optimizer, checkpointer, steps, save_every):
    paths = []
    for step in range(1, steps + 1):
        x = torch.randn(64, 128, device=device)
        y = torch.randint(0, 8, (64,), device=device)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % save_every == 0:
            paths.append(checkpointer.save(step, model, optimizer))
    checkpointer.wait()
    return paths


if __name__ == "__main__":
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 8)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = AsyncCheckpointer(tmp, device)
        paths = train(model, optimizer, ckpt, steps=60, save_every=20)
        restored = torch.load(paths[-1], weights_only=True)
        same = torch.equal(restored["model.0.weight"], model[0].weight.detach().cpu())
        print(len(paths), "checkpoints; last matches live weights:", same)
