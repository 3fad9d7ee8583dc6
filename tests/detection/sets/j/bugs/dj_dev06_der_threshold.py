# source: https://github.com/pyannote/pyannote-audio/pull/961
# area: device placement
# bug: a float threshold is turned into a 1-element tensor without device=, so comparing it with GPU predictions raises a device mismatch
import itertools

import torch
import torch.nn as nn


def speaker_permutations(n_speakers):
    return torch.tensor(list(itertools.permutations(range(n_speakers))))


def _best_permutation(preds, target, perms):
    permuted = preds[:, :, perms]
    cost = (permuted - target.unsqueeze(2)).abs().sum(dim=(1, 3))
    best = cost.argmin(dim=1)
    return permuted[torch.arange(preds.size(0), device=preds.device), :, best]


def _der_update(preds, target, perms, threshold=0.5):
    if isinstance(threshold, float):
        threshold = torch.tensor([threshold], dtype=preds.dtype)  # expect: any
    aligned = _best_permutation(preds, target, perms)
    hypothesis = (aligned.unsqueeze(-1) > threshold).float()
    target = target.unsqueeze(-1)
    detection_error = (hypothesis.sum(2) - target.sum(2)).clamp(min=0)
    false_alarm = detection_error.sum(1)
    missed = (target.sum(2) - hypothesis.sum(2)).clamp(min=0).sum(1)
    confusion = ((hypothesis != target).sum(2) - detection_error - (target.sum(2) - hypothesis.sum(2)).clamp(min=0)).clamp(min=0) / 2
    return false_alarm.sum(0), missed.sum(0), confusion.sum(1).sum(0), target.sum(dim=(0, 1, 2))


class DiarizationErrorRate(nn.Module):
    def __init__(self, n_speakers=3, threshold=0.5):
        super().__init__()
        self.threshold = threshold
        self.register_buffer("perms", speaker_permutations(n_speakers), persistent=False)
        for name in ("false_alarm", "missed", "confusion", "speech_total"):
            self.register_buffer(name, torch.zeros(1))

    def reset(self):
        for name in ("false_alarm", "missed", "confusion", "speech_total"):
            getattr(self, name).zero_()

    @torch.no_grad()
    def update(self, preds, target):
        fa, md, conf, total = _der_update(preds, target.float(), self.perms, self.threshold)
        self.false_alarm += fa
        self.missed += md
        self.confusion += conf
        self.speech_total += total

    def compute(self):
        return (self.false_alarm + self.missed + self.confusion) / self.speech_total.clamp(min=1)


class SegmentationModel(nn.Module):
    def __init__(self, n_features=20, n_speakers=3):
        super().__init__()
        self.lstm = nn.LSTM(n_features, 32, batch_first=True, bidirectional=True)
        self.head = nn.Linear(64, n_speakers)

    def forward(self, feats):
        out, _ = self.lstm(feats)
        return torch.sigmoid(self.head(out))


def synthetic_chunks(n, frames, n_features, n_speakers, generator):
    activity = (torch.rand(n, frames // 10, n_speakers, generator=generator) > 0.6).float()
    activity = activity.repeat_interleave(10, dim=1)
    proj = torch.randn(n_speakers, n_features, generator=generator)
    feats = activity @ proj + 0.3 * torch.randn(n, frames, n_features, generator=generator)
    return feats, activity.long()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gen = torch.Generator().manual_seed(7)
    feats, labels = synthetic_chunks(48, 100, 20, 3, gen)
    model = SegmentationModel().to(device)
    metric = DiarizationErrorRate(n_speakers=3, threshold=0.5).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(feats, labels), batch_size=16)
    for epoch in range(2):
        metric.reset()
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            preds = model(x)
            loss = nn.functional.binary_cross_entropy(_best_permutation(preds, y.float(), metric.perms), y.float())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            metric.update(preds.detach(), y)
        print(f"epoch {epoch} DER {metric.compute().item():.3f}")


if __name__ == "__main__":
    main()
