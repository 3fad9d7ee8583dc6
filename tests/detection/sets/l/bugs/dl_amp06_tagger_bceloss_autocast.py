# source: https://github.com/pytorch/pytorch/issues/61098
# area: AMP
# bug: the model ends in a sigmoid and the loss is nn.BCELoss computed inside CUDA autocast, which PyTorch refuses ("binary_cross_entropy and BCELoss are unsafe to autocast")
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class AudioTagger(nn.Module):
    """Small CNN over log-mel patches producing independent per-tag probabilities."""

    def __init__(self, n_mels=40, n_tags=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d((4, 1)),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(32 * 4, 64), nn.ReLU(), nn.Linear(64, n_tags),
                                  nn.Sigmoid())

    def forward(self, mel):
        return self.head(self.features(mel.unsqueeze(1)))


class TaggingTask:
    def __init__(self, model, lr=1e-3, use_amp=True):
        self.model = model
        self.criterion = nn.BCELoss()  # expect[b]: any
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        self.use_amp = use_amp and device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)

    def training_step(self, mel, targets):
        self.model.train()
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=self.use_amp):
            probs = self.model(mel)
            loss = self.criterion(probs, targets)  # expect[b]: any
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.detach()

    @torch.no_grad()
    def evaluate(self, mel, targets, threshold=0.5):
        self.model.eval()
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=self.use_amp):
            preds = self.model(mel) > threshold
        tp = (preds & targets.bool()).sum()
        return (2 * tp / (preds.sum() + targets.sum()).clamp(min=1)).item()


def synthetic_clips(n, n_mels=40, frames=32, n_tags=10):
    mel = torch.randn(n, n_mels, frames)
    tags = (mel[:, :n_tags, :].mean(dim=2) > 0).float()
    return mel, tags


if __name__ == "__main__":
    torch.manual_seed(0)
    task = TaggingTask(AudioTagger().to(device))
    mel, tags = synthetic_clips(128)
    mel, tags = mel.to(device), tags.to(device)
    history = []
    for epoch in range(2):
        for i in range(0, len(mel), 32):
            history.append(task.training_step(mel[i:i + 32], tags[i:i + 32]))
    print(f"last loss {torch.stack(history[-8:]).mean().item():.4f}, F1 {task.evaluate(mel, tags):.3f}")
