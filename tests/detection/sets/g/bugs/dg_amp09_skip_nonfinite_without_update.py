# source: https://github.com/espnet/espnet/pull/2362
# area: AMP
# bug: when the unscaled gradient norm is not finite the trainer skips both scaler.step() and scaler.update(), so on CUDA the first fp16 overflow leaves the scaler un-updated and the next iteration's unscale_() raises "unscale_() has already been called on this optimizer since the last update()"
import logging
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")


@dataclass
class TrainerOptions:
    grad_clip: float = 5.0
    accum_grad: int = 1
    use_amp: bool = torch.cuda.is_available()
    max_epoch: int = 2


class ConvCTCEncoder(nn.Module):
    def __init__(self, n_mels=20, hidden=48, vocab=12):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(n_mels, hidden, 5, padding=2), nn.ReLU(),
                                  nn.Conv1d(hidden, hidden, 5, stride=2, padding=2), nn.ReLU())
        self.out = nn.Linear(hidden, vocab)

    def forward(self, feats):
        h = self.conv(feats.transpose(1, 2)).transpose(1, 2)
        return self.out(h).log_softmax(dim=-1)


def ctc_loss(model, feats, targets, target_lens):
    log_probs = model(feats).float().transpose(0, 1)
    in_lens = torch.full((feats.size(0),), log_probs.size(0), dtype=torch.long, device=feats.device)
    return F.ctc_loss(log_probs, targets, in_lens, target_lens, blank=0, zero_infinity=True)


class Trainer:
    def __init__(self, model, optimizer, options: TrainerOptions, device):
        self.model, self.optimizer, self.options, self.device = model, optimizer, options, device
        self.scaler = torch.amp.GradScaler("cuda", enabled=options.use_amp)
        self.skipped = 0

    def train_one_epoch(self, iterator):
        self.model.train()
        for feats, targets, target_lens in iterator:
            feats, targets, target_lens = feats.to(self.device), targets.to(self.device), target_lens.to(self.device)
            with torch.autocast(device_type=self.device.type, enabled=self.options.use_amp):
                loss = ctc_loss(self.model, feats, targets, target_lens)
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(self.optimizer)
            grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.options.grad_clip)
            if not torch.isfinite(grad_norm):  # expect[skip]: any
                logging.warning("The grad norm is %s. Skipping updating the model.", grad_norm)
                self.skipped += 1
            else:
                self.scaler.step(self.optimizer)
                self.scaler.update()  # expect[skip]: any
            self.optimizer.zero_grad(set_to_none=True)

    def run(self, make_iterator):
        for epoch in range(self.options.max_epoch):
            self.train_one_epoch(make_iterator(epoch))
        return self.skipped


def make_iterator(epoch, n_batches=4, bs=4, frames=40, n_mels=20, vocab=12, max_tgt=6):
    g = torch.Generator().manual_seed(100 + epoch)
    for _ in range(n_batches):
        feats = torch.randn(bs, frames, n_mels, generator=g)
        target_lens = torch.randint(2, max_tgt + 1, (bs,), generator=g)
        targets = torch.randint(1, vocab, (bs, max_tgt), generator=g)
        yield feats, targets, target_lens


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = ConvCTCEncoder().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    skipped = Trainer(model, opt, TrainerOptions(), device).run(make_iterator)
    print("skipped updates:", skipped)
