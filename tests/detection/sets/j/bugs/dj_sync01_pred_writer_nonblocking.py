# source: https://github.com/Lightning-AI/pytorch-lightning/pull/11288
# area: transfer & sync
# bug: the generic collection mover always passes non_blocking=True, so the GPU->CPU copy of the predictions is read by numpy before the async copy has finished
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def move_data_to_device(data, device):
    device = torch.device(device)
    if isinstance(data, torch.Tensor):
        return data.to(device, non_blocking=True)  # expect: any
    if isinstance(data, dict):
        return {k: move_data_to_device(v, device) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(move_data_to_device(v, device) for v in data)
    return data


class TinySegmenter(nn.Module):
    def __init__(self, in_ch=3, num_classes=4, width=16):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(in_ch, width, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, padding=1),
            nn.ReLU(inplace=True),
        )
        self.head = nn.Conv2d(width, num_classes, 1)

    def forward(self, x):
        return self.head(self.body(x))


class PredictionWriter:
    """Collects predictions during the loop and writes them once at epoch end."""

    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.buffer = []

    def on_predict_batch_end(self, outputs):
        self.buffer.append(outputs)

    def on_predict_epoch_end(self):
        probs = torch.cat([o["probs"] for o in self.buffer])
        labels = torch.cat([o["labels"] for o in self.buffer])
        host = move_data_to_device({"probs": probs, "labels": labels}, "cpu")
        path = os.path.join(self.out_dir, "predictions.npz")
        np.savez(path, probs=host["probs"].numpy(), labels=host["labels"].numpy())
        self.buffer.clear()
        return path


@torch.no_grad()
def predict(model, loader, writer, device):
    model.eval()
    for (images,) in loader:
        images = move_data_to_device(images, device)
        logits = model(images)
        probs = logits.softmax(dim=1)
        writer.on_predict_batch_end({"probs": probs, "labels": probs.argmax(dim=1)})
    return writer.on_predict_epoch_end()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    images = torch.randn(64, 3, 32, 32)
    loader = DataLoader(TensorDataset(images), batch_size=16,
                        pin_memory=torch.cuda.is_available())
    model = TinySegmenter().to(device)
    with tempfile.TemporaryDirectory() as tmp:
        path = predict(model, loader, PredictionWriter(tmp), device)
        saved = np.load(path)
        print("saved", saved["probs"].shape, "class histogram",
              np.bincount(saved["labels"].ravel(), minlength=4))


if __name__ == "__main__":
    main()
