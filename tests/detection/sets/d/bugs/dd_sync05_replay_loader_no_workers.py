# source: https://github.com/awslabs/Renate/issues/251
# area: transfer & sync
# bug: the training DataLoader runs its heavy per-sample augmentations in the main process (no workers), so the GPU waits on the CPU every batch
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import ConcatDataset, DataLoader, Dataset


class AugmentedImageDataset(Dataset):
    """Images stored as uint8 numpy arrays with random crop, flip, color jitter and blur."""

    def __init__(self, images, labels, crop=24, seed=0):
        self.images = images
        self.labels = labels
        self.crop = crop
        self.rng = np.random.default_rng(seed)

    def __len__(self):
        return len(self.images)

    def _augment(self, img):
        h, w, _ = img.shape
        top = self.rng.integers(0, h - self.crop + 1)
        left = self.rng.integers(0, w - self.crop + 1)
        img = img[top:top + self.crop, left:left + self.crop].astype(np.float32) / 255.0
        if self.rng.random() < 0.5:
            img = img[:, ::-1]
        jitter = self.rng.uniform(0.8, 1.2, size=(1, 1, 3)).astype(np.float32)
        img = np.clip(img * jitter + self.rng.normal(0, 0.02, img.shape).astype(np.float32), 0.0, 1.0)
        kernel = np.array([0.25, 0.5, 0.25], dtype=np.float32)
        img = np.apply_along_axis(lambda r: np.convolve(r, kernel, mode="same"), 1, img)
        return np.ascontiguousarray(img.transpose(2, 0, 1))

    def __getitem__(self, idx):
        return torch.from_numpy(self._augment(self.images[idx])), int(self.labels[idx])


class ReplayLearner:
    """Continual learner that mixes the current task's data with a small replay memory."""

    def __init__(self, model, device, batch_size=32, memory_size=64):
        self.model = model.to(device)
        self.device = device
        self.batch_size = batch_size
        self.memory_size = memory_size
        self.memory = None
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05, momentum=0.9)

    def train_dataloader(self, task_dataset):
        dataset = task_dataset if self.memory is None else ConcatDataset([task_dataset, self.memory])
        return DataLoader(dataset, batch_size=self.batch_size, shuffle=True, drop_last=True)  # expect: any

    def update(self, task_dataset, epochs=1):
        loader = self.train_dataloader(task_dataset)
        self.model.train()
        running = torch.zeros((), device=self.device)
        for _ in range(epochs):
            for x, y in loader:
                x, y = x.to(self.device), y.to(self.device)
                loss = nn.functional.cross_entropy(self.model(x), y)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.optimizer.step()
                running += loss.detach()
        keep = np.random.default_rng(0).choice(len(task_dataset), self.memory_size, replace=False)
        self.memory = torch.utils.data.Subset(task_dataset, keep.tolist())
        return (running / max(1, epochs * len(loader))).item()


def make_task(task_id, n=160):
    rng = np.random.default_rng(task_id)
    images = rng.integers(0, 256, size=(n, 32, 32, 3), dtype=np.uint8)
    labels = rng.integers(task_id * 2, task_id * 2 + 2, size=n)
    return AugmentedImageDataset(images, labels, seed=task_id)


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(32, 6),
    )
    learner = ReplayLearner(net, device)
    for t in range(3):
        print(f"task {t}: loss {learner.update(make_task(t)):.4f}")
