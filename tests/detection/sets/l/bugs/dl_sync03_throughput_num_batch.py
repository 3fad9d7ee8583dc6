# source: https://github.com/meta-pytorch/torchrec/pull/2814
# area: transfer & sync
# bug: the batch counter is a registered buffer, so it moves to the GPU with the module and every Python comparison on it forces a stream sync
import time

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ThroughputMetric(nn.Module):
    """Tracks examples/sec; batch size may change after warm-up stages."""

    def __init__(self, batch_size, window_seconds=5.0, batch_size_stages=None, warmup_steps=3):
        super().__init__()
        self.batch_size = batch_size
        self.window_seconds = window_seconds
        self.batch_size_stages = batch_size_stages or []  # list of (max_batch_idx, batch_size)
        self.warmup_steps = warmup_steps
        self.register_buffer("num_batch", torch.tensor(0, dtype=torch.long))  # expect[nb]: any
        self.register_buffer("total_examples", torch.tensor(0, dtype=torch.long))
        self._window = []
        self._start = None

    def _get_batch_size(self):
        for max_idx, bs in self.batch_size_stages:
            if self.num_batch <= max_idx:  # expect[nb]: any
                return bs
        return self.batch_size

    def update(self):
        now = time.monotonic()
        if self._start is None:
            self._start = now
        self.num_batch += 1
        bs = self._get_batch_size()
        self.total_examples += bs
        self._window.append((now, bs))
        while self._window and now - self._window[0][0] > self.window_seconds:
            self._window.pop(0)

    def compute(self):
        span = max(self._window[-1][0] - self._window[0][0], 1e-6) if len(self._window) > 1 else 1e-6
        return {
            "window_qps": sum(bs for _, bs in self._window) / span,
            "total_examples": int(self.total_examples),
        }


class RecModel(nn.Module):
    def __init__(self, num_embeddings=1000, dim=32):
        super().__init__()
        self.emb = nn.EmbeddingBag(num_embeddings, dim, mode="sum")
        self.dense = nn.Sequential(nn.Linear(13, dim), nn.ReLU())
        self.head = nn.Linear(2 * dim, 1)

    def forward(self, dense, sparse):
        return self.head(torch.cat([self.dense(dense), self.emb(sparse)], dim=1)).squeeze(1)


class RecTask(nn.Module):
    def __init__(self, stages):
        super().__init__()
        self.model = RecModel()
        self.throughput = ThroughputMetric(batch_size=256, batch_size_stages=stages)


def main():
    stages = [(10, 64), (20, 128)]
    task = RecTask(stages).to(device)
    opt = torch.optim.Adagrad(task.model.parameters(), lr=0.05)
    loss_fn = nn.BCEWithLogitsLoss()
    for step in range(40):
        bs = task.throughput.batch_size
        for max_idx, stage_bs in stages:
            if step + 1 <= max_idx:
                bs = stage_bs
                break
        dense = torch.randn(bs, 13, device=device)
        sparse = torch.randint(0, 1000, (bs, 8), device=device)
        label = (torch.rand(bs, device=device) > 0.5).float()
        loss = loss_fn(task.model(dense, sparse), label)
        opt.zero_grad()
        loss.backward()
        opt.step()
        task.throughput.update()
    print(task.throughput.compute())


if __name__ == "__main__":
    main()
