# source: https://github.com/vadimkantorov/convasr/pull/73
# area: AMP
# bug: for fp16 inference on the GPU the per-utterance feature normalization sums log-mel frames in float16; on long recordings the time-axis sums exceed 65504, become -inf, and the whole transcript turns to NaN
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
HALF_INFERENCE = device.type == "cuda"


def temporal_mask(x, lengths):
    t = torch.arange(x.shape[-1], device=x.device)
    return (t[None, :] < lengths[:, None]).unsqueeze(1)  # [B, 1, T]


def normalize_features(x, mask, eps=1e-5):
    n = mask.sum(dim=-1, keepdim=True)
    mean = (x * mask).sum(dim=-1, keepdim=True) / n  # expect[w]: any
    var = (((x - mean) * mask) ** 2).sum(dim=-1, keepdim=True) / n
    return (x - mean) / (var + eps).sqrt() * mask


class ConvCTCModel(nn.Module):
    def __init__(self, n_mels=64, hidden=128, n_tokens=32):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv1d(n_mels, hidden, 11, stride=2, padding=5), nn.BatchNorm1d(hidden), nn.ReLU(),
            nn.Conv1d(hidden, hidden, 11, padding=5), nn.BatchNorm1d(hidden), nn.ReLU(),
            nn.Conv1d(hidden, hidden, 11, padding=5), nn.BatchNorm1d(hidden), nn.ReLU(),
        )
        self.classifier = nn.Conv1d(hidden, n_tokens, 1)

    def forward(self, x, lengths):
        mask = temporal_mask(x, lengths)
        x = normalize_features(x, mask)  # expect[w]: any
        return self.classifier(self.encoder(x))


class Transcriber:
    def __init__(self, model, alphabet="_ abcdefghijklmnopqrstuvwxyz'.,?"):
        self.model = model.to(device).eval()
        if HALF_INFERENCE:
            self.model = self.model.half()
        self.dtype = torch.float16 if HALF_INFERENCE else torch.float32
        self.alphabet = alphabet

    @torch.inference_mode()
    def __call__(self, feats, lengths):
        feats = feats.to(device=device, dtype=self.dtype)
        logits = self.model(feats, lengths.to(device))
        log_probs = F.log_softmax(logits.float(), dim=1)
        best = log_probs.argmax(dim=1).cpu()
        return [self.greedy_decode(b) for b in best], torch.isnan(log_probs).any().item()

    def greedy_decode(self, ids):
        ids = torch.unique_consecutive(ids)
        return "".join(self.alphabet[i] for i in ids.tolist() if i != 0)


def fake_log_mel(batch, n_mels, frames, gen):
    # log-mel energies of speech sit well below zero (silence ~ -20)
    return -12.0 + 4.0 * torch.randn(batch, n_mels, frames, generator=gen)


if __name__ == "__main__":
    gen = torch.Generator().manual_seed(0)
    transcriber = Transcriber(ConvCTCModel())
    lengths = torch.tensor([18000, 9000])  # ~3 min and ~1.5 min at 10 ms hop
    feats = fake_log_mel(2, 64, 18000, gen)
    texts, has_nan = transcriber(feats, lengths)
    print("has NaN:", has_nan, "| lengths of hypotheses:", [len(t) for t in texts])
