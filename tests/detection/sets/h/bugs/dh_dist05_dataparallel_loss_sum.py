# source: https://github.com/nyu-mll/jiant/pull/989
# area: porting & distributed
# bug: under nn.DataParallel the per-replica mean losses come back as a vector of length n_gpu, and summing it multiplies loss and gradients by the GPU count
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class TrainerParams:
    lr: float = 0.05
    max_grad_norm: float = 5.0
    steps: int = 12
    batch_size: int = 16
    tasks: list = field(default_factory=lambda: ["rte", "sst"])


class MultiTaskModel(nn.Module):
    def __init__(self, vocab=500, dim=48, tasks=("rte", "sst")):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.encoder = nn.Sequential(nn.Linear(dim, dim), nn.Tanh())
        self.heads = nn.ModuleDict({t: nn.Linear(dim, 2) for t in tasks})

    def forward(self, tokens, labels, task):
        pooled = self.encoder(self.embed(tokens))
        logits = self.heads[task](pooled)
        out = {"logits": logits}
        if labels is not None:
            out["loss"] = F.cross_entropy(logits, labels)
        return out


def get_output_attribute(out, attribute, cuda_devices):
    value = out[attribute]
    if isinstance(cuda_devices, list) and len(cuda_devices) > 1:
        return value.sum()  # expect: any
    return value


class SamplingMultiTaskTrainer:
    def __init__(self, model, params, device):
        self.params = params
        self.device = device
        self.cuda_devices = list(range(torch.cuda.device_count())) if device.type == "cuda" else -1
        model = model.to(device)
        if isinstance(self.cuda_devices, list) and len(self.cuda_devices) > 1:
            model = nn.DataParallel(model, device_ids=self.cuda_devices)
        self.model = model
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=params.lr, momentum=0.9)

    def make_batch(self, g):
        tokens = torch.randint(0, 500, (self.params.batch_size, 20), generator=g)
        labels = (tokens[:, 0] % 2).long()
        return tokens.to(self.device), labels.to(self.device)

    def train(self):
        g = torch.Generator().manual_seed(0)
        self.model.train()
        history = {t: torch.zeros((), device=self.device) for t in self.params.tasks}
        for step in range(self.params.steps):
            task = self.params.tasks[step % len(self.params.tasks)]
            tokens, labels = self.make_batch(g)
            out = self.model(tokens, labels, task)
            loss = get_output_attribute(out, "loss", self.cuda_devices)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(self.model.parameters(), self.params.max_grad_norm)
            self.optimizer.step()
            history[task] += loss.detach()
        return {t: v.item() / (self.params.steps / len(self.params.tasks)) for t, v in history.items()}


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    params = TrainerParams()
    trainer = SamplingMultiTaskTrainer(MultiTaskModel(tasks=params.tasks), params, device)
    summary = trainer.train()
    for task, loss in summary.items():
        print(f"{task}: avg train loss {loss:.4f}")


if __name__ == "__main__":
    main()
