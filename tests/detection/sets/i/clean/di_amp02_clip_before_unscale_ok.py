# twin of: bugs/di_amp02_clip_before_unscale.py
# area: AMP
# correct: scaler.unscale_ is called before clip_grad_norm_, so clipping sees true gradient magnitudes and scaler.step does not unscale twice
import torch
import torch.nn as nn
import torch.nn.functional as F


class SmallConvNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, 1)
        self.conv2 = nn.Conv2d(16, 32, 3, 1)
        self.fc1 = nn.Linear(32 * 12 * 12, 64)
        self.fc2 = nn.Linear(64, num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc2(F.relu(self.fc1(x)))


class Trainer:
    def __init__(self, model, device, lr=1e-2, max_grad_norm=12.0):
        self.model = model.to(device)
        self.device = device
        self.max_grad_norm = max_grad_norm
        self.use_amp = device.type == "cuda"
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=0.9)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)

    def _optimizer_step(self, loss):
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.optimizer)
        nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()

    def train_epoch(self, batches):
        self.model.train()
        total = torch.zeros((), device=self.device)
        for images, targets in batches:
            images = images.to(self.device)
            targets = targets.to(self.device)
            with torch.autocast(device_type=self.device.type, enabled=self.use_amp):
                logits = self.model(images)
                loss = F.cross_entropy(logits, targets)
            self._optimizer_step(loss)
            total += loss.detach()
        return total.item() / max(len(batches), 1)


def make_fake_mnist(n_batches=4, batch_size=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(n_batches):
        x = torch.randn(batch_size, 1, 28, 28, generator=g)
        y = torch.randint(0, 10, (batch_size,), generator=g)
        batches.append((x, y))
    return batches


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(1)
    trainer = Trainer(SmallConvNet(), device)
    data = make_fake_mnist()
    for epoch in range(2):
        print(f"epoch {epoch}: loss {trainer.train_epoch(data):.4f}")
