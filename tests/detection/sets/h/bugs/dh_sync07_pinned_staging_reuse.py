# source: https://github.com/pytorch/pytorch/issues/127612
# area: transfer & sync
# bug: one pinned staging buffer is refilled for the next batch while the previous non_blocking host-to-device copy from it may still be in flight, so the GPU can receive the wrong batch
import numpy as np
import torch
import torch.nn as nn


class FeatureStore:
    """Precomputed clip embeddings kept in host memory (stand-in for a memmap)."""

    def __init__(self, num_rows=2048, dim=256, num_classes=16, seed=0):
        rng = np.random.default_rng(seed)
        self.features = rng.standard_normal((num_rows, dim)).astype(np.float32)
        self.labels = rng.integers(0, num_classes, size=num_rows).astype(np.int64)

    def __len__(self):
        return len(self.labels)


class StagingPrefetcher:
    """Gathers random rows into a page-locked buffer and ships them to the device."""

    def __init__(self, store, batch_size, device, seed=0):
        self.store = store
        self.batch_size = batch_size
        self.device = device
        self.rng = np.random.default_rng(seed)
        pin = device.type == "cuda"
        dim = store.features.shape[1]
        self.x_stage = torch.empty(batch_size, dim, pin_memory=pin)
        self.y_stage = torch.empty(batch_size, dtype=torch.long, pin_memory=pin)

    def __iter__(self):
        order = self.rng.permutation(len(self.store))
        for start in range(0, len(order) - self.batch_size + 1, self.batch_size):
            idx = order[start:start + self.batch_size]
            self.x_stage.copy_(torch.from_numpy(self.store.features[idx]))  # expect[s]: any
            self.y_stage.copy_(torch.from_numpy(self.store.labels[idx]))
            x = self.x_stage.to(self.device, non_blocking=True)  # expect[s]: any
            y = self.y_stage.to(self.device, non_blocking=True)
            yield x, y


class ProbeHead(nn.Module):
    def __init__(self, dim=256, num_classes=16):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 128), nn.ReLU(), nn.Linear(128, num_classes))

    def forward(self, x):
        return self.net(x)


def train_linear_probe(store, device, epochs=3, batch_size=128):
    model = ProbeHead().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    crit = nn.CrossEntropyLoss()
    loader = StagingPrefetcher(store, batch_size, device)
    for epoch in range(epochs):
        total = torch.zeros((), device=device)
        correct = torch.zeros((), device=device, dtype=torch.long)
        seen = 0
        for x, y in loader:
            logits = model(x)
            loss = crit(logits, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach() * y.numel()
            correct += (logits.argmax(-1) == y).sum()
            seen += y.numel()
        print(f"epoch {epoch}: loss {(total / seen).item():.4f} acc {(correct.float() / seen).item():.3f}")
    return model


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    store = FeatureStore()
    train_linear_probe(store, device)


if __name__ == "__main__":
    main()
