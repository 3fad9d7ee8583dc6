# source: https://github.com/speechbrain/speechbrain/issues/2340
# area: porting & distributed
# bug: the speech encoder keeps a trainable mask embedding that is only used when spec-augment masking is on; fine-tuning with masking off leaves it without a gradient and DDP (find_unused_parameters=False) fails on the next iteration
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class SpeechEncoder(nn.Module):
    def __init__(self, dim=48, layers=2, apply_spec_augment=False, mask_prob=0.2):
        super().__init__()
        self.apply_spec_augment = apply_spec_augment
        self.mask_prob = mask_prob
        self.feature_extractor = nn.Sequential(
            nn.Conv1d(1, 32, 10, stride=5), nn.GELU(),
            nn.Conv1d(32, 32, 4, stride=4), nn.GELU(),
        )
        self.proj = nn.Linear(32, dim)
        self.mask_embed = nn.Parameter(torch.empty(dim).uniform_())  # expect[u]: any
        layer = nn.TransformerEncoderLayer(dim, 4, 2 * dim, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, wav):
        feats = self.proj(self.feature_extractor(wav.unsqueeze(1)).transpose(1, 2))
        if self.training and self.apply_spec_augment:
            mask = torch.rand(feats.shape[:2], device=feats.device) < self.mask_prob
            feats = torch.where(mask.unsqueeze(-1), self.mask_embed.to(feats.dtype), feats)
        return self.encoder(feats)


class EmotionRecognizer(nn.Module):
    def __init__(self, n_emotions=4, dim=48):
        super().__init__()
        self.ssl = SpeechEncoder(dim=dim)
        self.classifier = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, n_emotions))

    def forward(self, wav):
        hidden = self.ssl(wav)
        return self.classifier(hidden.mean(dim=1))


def synthetic_utterances(n=96, samples=1600, n_emotions=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, n_emotions, (n,), generator=g)
    t = torch.linspace(0, 1, samples)
    freqs = 40.0 + 30.0 * labels.float()
    wav = torch.sin(2 * torch.pi * freqs.unsqueeze(1) * t) + 0.3 * torch.randn(n, samples, generator=g)
    return TensorDataset(wav, labels)


def main():
    distributed = "RANK" in os.environ and dist.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    if distributed:
        dist.init_process_group("nccl" if use_cuda else "gloo")

    data = synthetic_utterances()
    sampler = DistributedSampler(data) if distributed else None
    loader = DataLoader(data, batch_size=16, sampler=sampler, shuffle=sampler is None, drop_last=True)

    model = EmotionRecognizer().to(device)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if use_cuda else None)  # expect[u]: any
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)

    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        correct = torch.zeros((), dtype=torch.long, device=device)
        for wav, label in loader:
            wav, label = wav.to(device), label.to(device)
            logits = model(wav)
            loss = nn.functional.cross_entropy(logits, label)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            correct += (logits.argmax(-1) == label).sum()
        if not distributed or dist.get_rank() == 0:
            print(f"epoch {epoch}: local train acc {correct.item() / (len(loader) * 16):.3f}")

    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
