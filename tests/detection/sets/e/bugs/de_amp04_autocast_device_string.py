# source: https://github.com/speechbrain/speechbrain/issues/2881
# area: AMP
# bug: the autocast device_type is built from the full device string, which is "cuda:0" on a GPU and is rejected by torch.autocast ("unsupported autocast device_type 'cuda:0'")
import torch
import torch.nn as nn


class SpeakerEmbedder(nn.Module):
    def __init__(self, n_mels=40, channels=64, emb_dim=32):
        super().__init__()
        self.tdnn = nn.Sequential(
            nn.Conv1d(n_mels, channels, 5, padding=2), nn.ReLU(), nn.BatchNorm1d(channels),
            nn.Conv1d(channels, channels, 3, dilation=2, padding=2), nn.ReLU(), nn.BatchNorm1d(channels),
        )
        self.proj = nn.Linear(2 * channels, emb_dim)

    def forward(self, mels):
        h = self.tdnn(mels)
        stats = torch.cat([h.mean(dim=-1), h.std(dim=-1)], dim=-1)
        return self.proj(stats)


class EmbeddingExtractor:
    def __init__(self, model, run_opts):
        self.device = run_opts.get("device", "cpu")
        self.precision = run_opts.get("precision", "fp16")
        self.model = model.to(self.device).eval()

    def _amp_dtype(self):
        if self.precision == "fp16" and self.device.startswith("cuda"):
            return torch.float16
        return torch.bfloat16

    @torch.no_grad()
    def encode_batch(self, wav_feats):
        wav_feats = wav_feats.to(self.device, non_blocking=False)
        with torch.autocast(device_type=str(self.device), dtype=self._amp_dtype()):  # expect: any
            emb = self.model(wav_feats)
        return torch.nn.functional.normalize(emb.float(), dim=-1)


def cosine_scores(enroll, test):
    return (enroll * test).sum(dim=-1)


def make_trials(n_pairs, n_mels=40, frames=120, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(n_pairs, n_mels, frames, generator=g)
    b = a + 0.3 * torch.randn(n_pairs, n_mels, frames, generator=g)
    return a, b


def main():
    torch.manual_seed(0)
    run_opts = {"device": "cuda:0" if torch.cuda.is_available() else "cpu", "precision": "fp16"}
    extractor = EmbeddingExtractor(SpeakerEmbedder(), run_opts)
    enroll, test = make_trials(16)
    scores = cosine_scores(extractor.encode_batch(enroll), extractor.encode_batch(test))
    print("mean trial score", scores.mean().item())


if __name__ == "__main__":
    main()
