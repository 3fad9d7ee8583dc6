# source: https://github.com/pfnet/pytorch-pfn-extras/issues/690
# area: AMP
# bug: the snapshot saves model/optimizer/iteration but not the GradScaler state, so a resumed GPU run restarts at scale 65536 with a fresh growth tracker and skips steps while the scale re-calibrates, diverging from an uninterrupted run
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class AudioTagger(nn.Module):
    def __init__(self, n_mels=40, n_tags=8):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(n_mels, 64, 5, padding=2), nn.GELU(),
            nn.Conv1d(64, 64, 5, padding=2), nn.GELU(),
        )
        self.head = nn.Linear(64, n_tags)

    def forward(self, x):
        return self.head(self.conv(x).mean(dim=-1))


class Manager:
    def __init__(self, model, lr=1e-3, snapshot_dir=None):
        self.model = model.to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda", growth_interval=50)
        self.iteration = 0
        self.snapshot_dir = snapshot_dir

    def state_dict(self):
        return {  # expect[w]: any
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "iteration": self.iteration,
        }

    def load_state_dict(self, state):
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.iteration = state["iteration"]  # expect[w]: any

    def snapshot(self):
        path = os.path.join(self.snapshot_dir, f"snapshot_iter_{self.iteration}.pt")
        torch.save(self.state_dict(), path)
        return path

    def resume(self, path):
        self.load_state_dict(torch.load(path, map_location=device))

    def run_iteration(self, x, y):
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=self.scaler.is_enabled()):
            loss = F.binary_cross_entropy_with_logits(self.model(x), y)
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.iteration += 1
        return loss.detach()


def batches(n, gen):
    for _ in range(n):
        x = torch.randn(16, 40, 100, generator=gen)
        y = (x.mean(dim=(1, 2), keepdim=False)[:, None] > torch.linspace(-0.05, 0.05, 8)).float()
        yield x.to(device), y.to(device)


if __name__ == "__main__":
    gen = torch.Generator().manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        first = Manager(AudioTagger(), snapshot_dir=tmp)
        for x, y in batches(6, gen):
            first.run_iteration(x, y)
        path = first.snapshot()

        resumed = Manager(AudioTagger(), snapshot_dir=tmp)
        resumed.resume(path)
        losses = [resumed.run_iteration(x, y) for x, y in batches(6, gen)]
        print(f"resumed at iteration {resumed.iteration}, scale {resumed.scaler.get_scale():.1f}",
              f"loss {torch.stack(losses).mean().item():.4f}")
