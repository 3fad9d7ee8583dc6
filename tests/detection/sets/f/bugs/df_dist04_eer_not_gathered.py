# source: https://github.com/pyannote/pyannote-audio/issues/591
# area: porting & distributed
# bug: under DDP each rank computes the validation EER from only its own DistributedSampler shard of trials, so the logged EER (and the best-checkpoint choice) is not the EER of the validation set
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class TrialPairs(Dataset):
    """Verification trials: two fake feature sequences and a same-speaker flag."""

    def __init__(self, n_trials=203, n_speakers=12, frames=20, n_feats=16):
        g = torch.Generator().manual_seed(1)
        self.centroids = torch.randn(n_speakers, n_feats, generator=g)
        self.spk = torch.randint(0, n_speakers, (n_trials, 2), generator=g)
        same = torch.rand(n_trials, generator=g) < 0.5
        self.spk[same, 1] = self.spk[same, 0]
        self.noise = 4.0 * torch.randn(n_trials, 2, frames, n_feats, generator=g)

    def __len__(self):
        return len(self.spk)

    def __getitem__(self, i):
        a = self.centroids[self.spk[i, 0]] + self.noise[i, 0]
        b = self.centroids[self.spk[i, 1]] + self.noise[i, 1]
        return i, a, b, float(self.spk[i, 0] == self.spk[i, 1])


class XVectorLite(nn.Module):
    def __init__(self, n_feats=16, dim=32):
        super().__init__()
        self.frame = nn.Sequential(nn.Conv1d(n_feats, 64, 3, padding=1), nn.ReLU(), nn.Conv1d(64, 64, 3, padding=1))
        self.proj = nn.Linear(128, dim)

    def forward(self, x):
        h = self.frame(x.transpose(1, 2))
        return self.proj(torch.cat([h.mean(-1), h.std(-1)], dim=-1))


def compute_eer(scores, labels):
    order = torch.argsort(scores, descending=True)
    lab = labels[order]
    fpr = torch.cumsum(1 - lab, 0) / (1 - lab).sum().clamp_min(1)
    fnr = 1 - torch.cumsum(lab, 0) / lab.sum().clamp_min(1)
    k = torch.argmin((fnr - fpr).abs())
    return (fnr[k] + fpr[k]) / 2


@torch.no_grad()
def validate(model, loader, device):
    model.eval()
    scores, labels = [], []
    for _, a, b, same in loader:
        ea, eb = model(a.to(device)), model(b.to(device))
        scores.append(F.cosine_similarity(ea, eb))
        labels.append(same.to(device, dtype=torch.float32))
    return compute_eer(torch.cat(scores), torch.cat(labels))  # expect: any


def main(epochs=2):
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")

    torch.manual_seed(0)
    trials = TrialPairs()
    val_loader = DataLoader(trials, batch_size=32, sampler=DistributedSampler(trials, shuffle=False))
    model = XVectorLite().to(device)
    classifier = nn.Sequential(model, nn.Linear(32, len(trials.centroids))).to(device)
    classifier = DDP(classifier, device_ids=[local_rank] if device.type == "cuda" else None)
    centroids = trials.centroids.to(device)
    opt = torch.optim.SGD(classifier.parameters(), lr=0.05)
    best = float("inf")
    for epoch in range(epochs):
        classifier.train()
        spk = torch.randint(0, len(centroids), (32,), device=device)
        x = centroids[spk].unsqueeze(1) + 4.0 * torch.randn(32, 20, 16, device=device)
        loss = F.cross_entropy(classifier(x), spk)
        opt.zero_grad()
        loss.backward()
        opt.step()
        eer = validate(model, val_loader, device).item()
        if dist.get_rank() == 0:
            best = min(best, eer)
            print(f"epoch {epoch}: val EER {100 * eer:.2f}% (best {100 * best:.2f}%)")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
