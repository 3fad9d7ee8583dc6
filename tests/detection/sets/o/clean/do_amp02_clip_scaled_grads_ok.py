# twin of: bugs/do_amp02_clip_scaled_grads.py
# area: AMP
# correct: the optimizer's gradients are unscaled with scaler.unscale_ before their norm is clipped, so clipping sees true gradient magnitudes
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class BagOfEmbeddingsClassifier(nn.Module):
    def __init__(self, vocab_size=500, dim=64, num_labels=4):
        super().__init__()
        self.embedder = nn.EmbeddingBag(vocab_size, dim, mode="mean")
        self.encoder = nn.Sequential(nn.Linear(dim, dim), nn.Tanh())
        self.head = nn.Linear(dim, num_labels)

    def forward(self, tokens, label=None):
        logits = self.head(self.encoder(self.embedder(tokens)))
        output = {"logits": logits}
        if label is not None:
            output["loss"] = F.cross_entropy(logits, label)
        return output


class GradientDescentTrainer:
    def __init__(self, model, optimizer, loader, device, grad_norm=1.0, use_amp=True):
        self.model = model
        self.optimizer = optimizer
        self.loader = loader
        self.device = device
        self._grad_norm = grad_norm
        self._use_amp = use_amp and device.type == "cuda"
        self._scaler = torch.amp.GradScaler("cuda", enabled=self._use_amp)

    def rescale_gradients(self):
        if self._grad_norm is None:
            return None
        self._scaler.unscale_(self.optimizer)
        params = [p for p in self.model.parameters() if p.grad is not None]
        return torch.nn.utils.clip_grad_norm_(params, self._grad_norm)

    def batch_outputs(self, batch):
        tokens, label = (t.to(self.device, non_blocking=True) for t in batch)
        with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self._use_amp):
            return self.model(tokens, label)

    def _train_epoch(self, epoch):
        self.model.train()
        loss_sum = torch.zeros((), device=self.device)
        norm_sum = torch.zeros((), device=self.device)
        for batch in self.loader:
            self.optimizer.zero_grad(set_to_none=True)
            loss = self.batch_outputs(batch)["loss"]
            self._scaler.scale(loss).backward()
            batch_grad_norm = self.rescale_gradients()
            self._scaler.step(self.optimizer)
            self._scaler.update()
            loss_sum += loss.detach()
            norm_sum += batch_grad_norm.detach()
        n = len(self.loader)
        return {"loss": loss_sum.item() / n, "grad_norm": norm_sum.item() / n}

    def train(self, num_epochs):
        for epoch in range(num_epochs):
            metrics = self._train_epoch(epoch)
            print(f"epoch {epoch}: {metrics}")


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    tokens = torch.randint(0, 500, (256, 20))
    labels = (tokens[:, 0] % 4).long()
    loader = DataLoader(TensorDataset(tokens, labels), batch_size=32, shuffle=True,
                        pin_memory=device.type == "cuda")
    model = BagOfEmbeddingsClassifier().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    GradientDescentTrainer(model, optimizer, loader, device, grad_norm=1.0).train(3)


if __name__ == "__main__":
    main()
