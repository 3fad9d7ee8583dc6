# source: https://github.com/pytorch/pytorch/issues/131256
# area: transfer & sync
# bug: torch.nonzero on the GPU padding mask in every forward pass waits for the device to learn the output size (host sync per batch)
import torch
import torch.nn as nn
import torch.nn.functional as F


class FrameEncoder(nn.Module):
    def __init__(self, n_mels=40, hidden=96, n_labels=30):
        super().__init__()
        self.conv = nn.Conv1d(n_mels, hidden, kernel_size=3, padding=1)
        self.rnn = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, n_labels)

    def forward(self, feats, lengths):
        # feats: [B, T, F], lengths: [B]
        h = F.relu(self.conv(feats.transpose(1, 2))).transpose(1, 2)
        h, _ = self.rnn(h)
        B, T, D = h.shape
        time_idx = torch.arange(T, device=h.device)
        mask = time_idx.unsqueeze(0) < lengths.unsqueeze(1)  # [B, T]
        flat_idx = torch.nonzero(mask.reshape(-1)).squeeze(1)  # expect: any
        packed = h.reshape(B * T, D).index_select(0, flat_idx)
        return self.out(packed), flat_idx


def frame_targets(labels, flat_idx):
    return labels.reshape(-1).index_select(0, flat_idx)


def synth_batch(batch, max_t, n_mels, n_labels, g):
    lengths = torch.randint(max_t // 2, max_t + 1, (batch,), generator=g)
    feats = torch.randn(batch, max_t, n_mels, generator=g)
    labels = torch.randint(0, n_labels, (batch, max_t), generator=g)
    return feats, lengths, labels


def run_training(device, steps=25):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    model = FrameEncoder().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_sum = torch.zeros((), device=device)
    for step in range(steps):
        feats, lengths, labels = synth_batch(8, 60, 40, 30, g)
        feats = feats.to(device)
        lengths = lengths.to(device)
        labels = labels.to(device)
        logits, flat_idx = model(feats, lengths)
        loss = F.cross_entropy(logits, frame_targets(labels, flat_idx))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss_sum += loss.detach()
    print(f"mean frame CE over {steps} steps: {(loss_sum / steps).item():.4f}")


if __name__ == "__main__":
    run_training(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
