# source: https://github.com/Lightning-AI/pytorch-lightning/issues/13871
# area: dtype
# bug: the model ends in a sigmoid and the loss is nn.BCELoss; under the float16 autocast enabled only on CUDA, binary_cross_entropy raises "unsafe to autocast"
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class TrainerConfig:
    def __init__(self, epochs=3, lr=1e-3, batch_size=32, threshold=0.5):
        self.epochs = epochs
        self.lr = lr
        self.batch_size = batch_size
        self.threshold = threshold


class AudioTagger(nn.Module):
    def __init__(self, n_mels=40, n_tags=8):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(n_mels, 64, 5, padding=2), nn.BatchNorm1d(64), nn.ReLU(),
            nn.Conv1d(64, 64, 5, padding=2), nn.BatchNorm1d(64), nn.ReLU(),
        )
        self.head = nn.Linear(64, n_tags)

    def forward(self, mel):
        feats = self.conv(mel).mean(dim=-1)
        return torch.sigmoid(self.head(feats))


class TaggerTrainer:
    def __init__(self, model, cfg, device):
        self.model = model.to(device)
        self.cfg = cfg
        self.device = device
        self.use_amp = device.type == "cuda"
        self.criterion = nn.BCELoss()  # expect[bce]: any
        self.opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)

    def training_step(self, mel, tags):
        with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.use_amp):
            probs = self.model(mel)
            loss = self.criterion(probs, tags)  # expect[bce]: any
        self.opt.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)
        self.scaler.update()
        return loss.detach()

    def fit(self, loader):
        for epoch in range(self.cfg.epochs):
            self.model.train()
            running = torch.zeros((), device=self.device)
            for mel, tags in loader:
                mel = mel.to(self.device, non_blocking=True)
                tags = tags.to(self.device, non_blocking=True)
                running += self.training_step(mel, tags)
            print(f"epoch {epoch}: bce {(running / len(loader)).item():.4f}")

    @torch.no_grad()
    def predict(self, mel):
        self.model.eval()
        probs = self.model(mel.to(self.device))
        return (probs > self.cfg.threshold).int().cpu()


def synthetic_clips(n=128, n_mels=40, frames=50, n_tags=8):
    g = torch.Generator().manual_seed(0)
    mel = torch.randn(n, n_mels, frames, generator=g)
    tags = (torch.rand(n, n_tags, generator=g) < 0.3).float()
    return TensorDataset(mel, tags)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = TrainerConfig()
    data = synthetic_clips()
    loader = DataLoader(data, batch_size=cfg.batch_size, shuffle=True, pin_memory=device.type == "cuda")
    trainer = TaggerTrainer(AudioTagger(), cfg, device)
    trainer.fit(loader)
    print("predicted tags for first clip:", trainer.predict(data.tensors[0][:1]).tolist())


if __name__ == "__main__":
    main()
