# source: https://github.com/Lightning-AI/pytorch-lightning/issues/20995
# area: transfer & sync
# bug: the progress-bar callback converts every step-logged GPU metric to a Python float with .item() at each batch end, stalling the CPU on cudaStreamSynchronize every step
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class LitClassifier(nn.Module):
    def __init__(self, dim=64, n_cls=10):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, 256), nn.ReLU(), nn.Linear(256, n_cls))
        self.trainer = None

    def log(self, name, value, on_step=True, prog_bar=False):
        if on_step and prog_bar:
            self.trainer.progress_bar_metrics[name] = value.detach()

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self.net(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(-1) == y).float().mean()
        self.log("train_loss", loss, on_step=True, prog_bar=True)
        self.log("train_acc", acc, on_step=True, prog_bar=True)
        return loss


def convert_tensors_to_scalars(metrics):
    return {k: (v.item() if torch.is_tensor(v) else v) for k, v in metrics.items()}  # expect: any


class ProgressBar:
    def __init__(self, stream=sys.stdout):
        self.stream = stream
        self.postfix = {}

    def on_train_batch_end(self, trainer, batch_idx):
        self.postfix = convert_tensors_to_scalars(trainer.progress_bar_metrics)
        if batch_idx == trainer.num_batches - 1:
            text = " ".join(f"{k}={v:.3f}" for k, v in self.postfix.items())
            self.stream.write(f"epoch {trainer.current_epoch} [{batch_idx + 1}/{trainer.num_batches}] {text}\n")


class MiniTrainer:
    def __init__(self, max_epochs, callbacks):
        self.max_epochs = max_epochs
        self.callbacks = callbacks
        self.progress_bar_metrics = {}
        self.current_epoch = 0
        self.num_batches = 0

    def fit(self, module, batches):
        module.trainer = self
        module.to(device).train()
        optimizer = torch.optim.Adam(module.parameters(), lr=1e-3)
        self.num_batches = len(batches)
        for epoch in range(self.max_epochs):
            self.current_epoch = epoch
            for batch_idx, batch in enumerate(batches):
                loss = module.training_step(batch, batch_idx)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                for cb in self.callbacks:
                    cb.on_train_batch_end(self, batch_idx)


def make_batches(n_batches=50, batch_size=128, dim=64, n_cls=10):
    w = torch.randn(dim, n_cls, device=device)
    batches = []
    for _ in range(n_batches):
        x = torch.randn(batch_size, dim, device=device)
        batches.append((x, (x @ w).argmax(-1)))
    return batches


if __name__ == "__main__":
    torch.manual_seed(0)
    MiniTrainer(max_epochs=3, callbacks=[ProgressBar()]).fit(LitClassifier(), make_batches())
