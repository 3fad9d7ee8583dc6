# twin of: bugs/do_dev03_cmvn_plain_attrs.py
# area: device placement
# correct: the CMVN statistics are registered as buffers, so encoder.to(device) moves them together with the weights
import torch
import torch.nn as nn
import torch.nn.functional as F


def compute_global_cmvn(feature_batches):
    """Accumulate mean / inverse std over a corpus of (T, F) feature matrices."""
    total = None
    total_sq = None
    frames = 0
    for feats in feature_batches:
        s, sq = feats.sum(0), (feats ** 2).sum(0)
        total = s if total is None else total + s
        total_sq = sq if total_sq is None else total_sq + sq
        frames += feats.shape[0]
    mean = total / frames
    var = (total_sq / frames - mean ** 2).clamp(min=1e-10)
    return -mean, var.rsqrt()


class ConvSubsampleEncoder(nn.Module):
    def __init__(self, num_mel, d_model, vocab_size, neg_mean, inv_stddev):
        super().__init__()
        self.register_buffer("neg_mean", neg_mean)
        self.register_buffer("inv_stddev", inv_stddev)
        self.subsample = nn.Sequential(
            nn.Conv1d(num_mel, d_model, kernel_size=3, stride=2, padding=1), nn.GELU(),
            nn.Conv1d(d_model, d_model, kernel_size=3, stride=2, padding=1), nn.GELU(),
        )
        layer = nn.TransformerEncoderLayer(d_model, nhead=4, dim_feedforward=2 * d_model, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.ctc_head = nn.Linear(d_model, vocab_size)

    def forward(self, xs_pad, xs_lens):
        xs = (xs_pad + self.neg_mean) * self.inv_stddev
        xs = self.subsample(xs.transpose(1, 2)).transpose(1, 2)
        out_lens = ((xs_lens + 1) // 2 + 1) // 2
        pad_mask = torch.arange(xs.shape[1], device=xs.device)[None, :] >= out_lens[:, None]
        hs = self.encoder(xs, src_key_padding_mask=pad_mask)
        return self.ctc_head(hs).log_softmax(-1), out_lens


def random_batch(batch, max_frames, num_mel, vocab_size, gen):
    lens = torch.randint(max_frames // 2, max_frames + 1, (batch,), generator=gen)
    lens[0] = max_frames
    feats = 3.0 + 2.0 * torch.randn(batch, max_frames, num_mel, generator=gen)
    tgt_lens = torch.randint(2, 6, (batch,), generator=gen)
    targets = torch.randint(1, vocab_size, (int(tgt_lens.sum()),), generator=gen)
    return feats, lens, targets, tgt_lens


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    num_mel, vocab = 40, 30
    gen = torch.Generator().manual_seed(0)
    corpus = [3.0 + 2.0 * torch.randn(int(torch.randint(50, 120, (1,), generator=gen)), num_mel, generator=gen) for _ in range(32)]
    neg_mean, inv_std = compute_global_cmvn(corpus)

    model = ConvSubsampleEncoder(num_mel, 64, vocab, neg_mean, inv_std).to(device)
    optim = torch.optim.AdamW(model.parameters(), lr=5e-4)
    ctc = nn.CTCLoss(blank=0, zero_infinity=True)

    model.train()
    for step in range(6):
        feats, lens, targets, tgt_lens = random_batch(8, 96, num_mel, vocab, gen)
        feats, lens = feats.to(device), lens.to(device)
        targets, tgt_lens = targets.to(device), tgt_lens.to(device)
        log_probs, out_lens = model(feats, lens)
        loss = ctc(log_probs.transpose(0, 1), targets, out_lens, tgt_lens)
        optim.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optim.step()
    print("final ctc loss", float(loss.detach()))


if __name__ == "__main__":
    main()
