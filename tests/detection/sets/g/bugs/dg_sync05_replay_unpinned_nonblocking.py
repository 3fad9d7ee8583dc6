# source: https://github.com/awslabs/Renate/pull/17
# area: transfer & sync
# bug: the learner moves batches with .to(device, non_blocking=True) but its DataLoaders are built without pin_memory, so the copies come from pageable memory and the asynchronous transfer does not overlap with compute
import random
import torch
import torch.nn as nn
from torch.utils.data import ConcatDataset, DataLoader, TensorDataset


def make_task(task_id, n=128, dim=32, classes=4, seed=0):
    g = torch.Generator().manual_seed(seed + task_id)
    x = torch.randn(n, dim, generator=g) + task_id
    y = torch.randint(0, classes, (n,), generator=g) + classes * task_id
    return TensorDataset(x, y)


class ReservoirBuffer:
    def __init__(self, capacity, seed=0):
        self.capacity = capacity
        self.xs, self.ys = [], []
        self.seen = 0
        self.rng = random.Random(seed)

    def add(self, dataset):
        for x, y in dataset:
            self.seen += 1
            if len(self.xs) < self.capacity:
                self.xs.append(x)
                self.ys.append(y)
            else:
                j = self.rng.randrange(self.seen)
                if j < self.capacity:
                    self.xs[j], self.ys[j] = x, y

    def as_dataset(self):
        return TensorDataset(torch.stack(self.xs), torch.stack(self.ys))


class ReplayLearner:
    def __init__(self, model, device, batch_size=32, num_workers=2, memory_size=128):
        self.model = model.to(device)
        self.device = device
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.buffer = ReservoirBuffer(memory_size)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.05, momentum=0.9)
        self.loss_fn = nn.CrossEntropyLoss()

    def _loader(self, dataset, shuffle):
        return DataLoader(dataset, batch_size=self.batch_size, shuffle=shuffle,  # expect[w]: any
                          num_workers=self.num_workers, persistent_workers=True)

    def _to_device(self, batch):
        return [t.to(self.device, non_blocking=True) for t in batch]  # expect[w]: any

    def update(self, task_data, epochs=1):
        data = task_data if not self.buffer.xs else ConcatDataset(
            [task_data, self.buffer.as_dataset()])
        loader = self._loader(data, shuffle=True)
        self.model.train()
        for _ in range(epochs):
            for batch in loader:
                x, y = self._to_device(batch)
                loss = self.loss_fn(self.model(x), y)
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                self.opt.step()
        self.buffer.add(task_data)

    @torch.no_grad()
    def evaluate(self, dataset):
        self.model.eval()
        correct = torch.zeros((), dtype=torch.long, device=self.device)
        for batch in self._loader(dataset, shuffle=False):
            x, y = self._to_device(batch)
            correct += (self.model(x).argmax(dim=1) == y).sum()
        return correct.item() / len(dataset)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    n_tasks, classes = 3, 4
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, n_tasks * classes))
    learner = ReplayLearner(model, device)
    tasks = [make_task(t, classes=classes) for t in range(n_tasks)]
    for t, task in enumerate(tasks):
        learner.update(task)
        accs = [learner.evaluate(tasks[k]) for k in range(t + 1)]
        print(f"after task {t}: " + ", ".join(f"{a:.2f}" for a in accs))


if __name__ == "__main__":
    main()
