# source: https://github.com/graphnet-team/graphnet/issues/846
# area: AMP
# bug: the classification task applies sigmoid and the loss calls F.binary_cross_entropy inside the fp16 autocast region, which raises "binary_cross_entropy ... unsafe to autocast" on a GPU
import torch
import torch.nn as nn
import torch.nn.functional as F


class PulseEncoder(nn.Module):
    def __init__(self, in_features=6, hidden=64):
        super().__init__()
        self.node_mlp = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.readout = nn.Linear(2 * hidden, hidden)

    def forward(self, pulses, mask):
        h = self.node_mlp(pulses) * mask.unsqueeze(-1)
        mean = h.sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        mx = h.masked_fill(mask.unsqueeze(-1) == 0, -1e4).amax(1)
        return F.relu(self.readout(torch.cat([mean, mx], dim=-1)))


class BinaryCrossEntropyLoss(nn.Module):
    def forward(self, prediction, target):
        return F.binary_cross_entropy(prediction.squeeze(-1), target)  # expect: any


class BinaryClassificationTask(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.head = nn.Linear(hidden, 1)
        self.loss_fn = BinaryCrossEntropyLoss()

    def forward(self, features):
        return torch.sigmoid(self.head(features))

    def compute_loss(self, prediction, target):
        return self.loss_fn(prediction, target)


class EventClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = PulseEncoder()
        self.task = BinaryClassificationTask()

    def forward(self, pulses, mask):
        return self.task(self.backbone(pulses, mask))


def synthetic_events(n_events=256, max_pulses=24):
    pulses = torch.randn(n_events, max_pulses, 6)
    lengths = torch.randint(4, max_pulses + 1, (n_events,))
    mask = (torch.arange(max_pulses)[None, :] < lengths[:, None]).float()
    label = (pulses[:, :, 0] * mask).sum(1).gt(0).float()
    return pulses, mask, label


def train(model, data, device, epochs=3, batch_size=64):
    use_amp = device.type == "cuda"
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    pulses, mask, label = (t.to(device) for t in data)
    for epoch in range(epochs):
        total = torch.zeros((), device=device)
        for i in range(0, len(label), batch_size):
            sl = slice(i, i + batch_size)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
                pred = model(pulses[sl], mask[sl])
                loss = model.task.compute_loss(pred, label[sl])
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            total += loss.detach()
        print(f"epoch {epoch} loss {(total / (len(label) // batch_size)).item():.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train(EventClassifier().to(device), synthetic_events(), device)
