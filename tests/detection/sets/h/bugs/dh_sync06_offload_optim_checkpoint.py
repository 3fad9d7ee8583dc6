# source: https://github.com/PrimeIntellect-ai/prime-rl/pull/3109
# area: transfer & sync
# bug: optimizer state is offloaded into pinned host buffers with an async D2H copy and the checkpoint is written from those buffers with no synchronisation, so the saved state can be incomplete
import os
import tempfile

import torch
import torch.nn as nn


class CPUOffloadAdamW:
    """AdamW whose moment buffers live on the host between steps."""

    def __init__(self, params, lr=1e-3, pin_memory=None):
        self.inner = torch.optim.AdamW(params, lr=lr)
        self.device = next(p.device for g in self.inner.param_groups for p in g["params"])
        self.pin_memory = torch.cuda.is_available() if pin_memory is None else pin_memory
        self.offloaded = False

    def _move_tensor(self, v, device):
        if device == "cpu":
            if self.pin_memory:
                dst = torch.empty(v.shape, dtype=v.dtype, device="cpu", pin_memory=True)
                dst.copy_(v, non_blocking=True)  # expect: any
                return dst
            return v.to("cpu")
        return v.to(device, non_blocking=True)

    def _move_state(self, device):
        for state in self.inner.state.values():
            for key, value in state.items():
                if torch.is_tensor(value) and key != "step":
                    state[key] = self._move_tensor(value, device)

    def offload(self):
        self._move_state("cpu")
        self.offloaded = True

    def reload(self):
        self._move_state(self.device)
        self.offloaded = False

    def zero_grad(self):
        self.inner.zero_grad(set_to_none=True)

    def step(self):
        if self.offloaded:
            self.reload()
        self.inner.step()
        self.offload()

    def state_dict(self):
        return self.inner.state_dict()


def build_model():
    return nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 128), nn.GELU(), nn.Linear(128, 8))


def save_checkpoint(path, model, optimizer, step):
    torch.save({"step": step, "model": model.state_dict(), "optim": optimizer.state_dict()}, path)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = build_model().to(device)
    optimizer = CPUOffloadAdamW(model.parameters(), lr=1e-3)
    x = torch.randn(256, 64, device=device)
    y = torch.randn(256, 8, device=device)
    ckpt_dir = tempfile.mkdtemp(prefix="offload_ckpt_")
    for step in range(1, 31):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            path = os.path.join(ckpt_dir, f"step_{step}.pt")
            save_checkpoint(path, model, optimizer, step)
            print(f"step {step}: loss {loss.item():.4f} -> {os.path.basename(path)}")
    state = torch.load(path, map_location="cpu")
    first = next(iter(state["optim"]["state"].values()))
    print("restored exp_avg norm:", first["exp_avg"].norm().item())


if __name__ == "__main__":
    main()
