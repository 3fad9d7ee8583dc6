# source: https://github.com/vllm-project/vllm/pull/54620
# area: dtype
# bug: the sinusoidal position encoding is computed in the model dtype, which is fp16 on the GPU; timescales and position*timescale products lose precision and the sin/cos phases are badly wrong for later frames
import math
import torch
import torch.nn as nn


class SinusoidalPositionEncoder(nn.Module):
    def encode(self, positions, depth, dtype):
        half = depth // 2
        log_increment = math.log(10000.0) / (half - 1)
        steps = torch.arange(half, device=positions.device, dtype=dtype)  # expect[w]: any
        inv_timescales = torch.exp(steps * -log_increment)
        scaled_time = positions.to(dtype)[:, None] * inv_timescales[None, :]  # expect[w]: any
        return torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1)

    def forward(self, x):
        _, frames, depth = x.shape
        positions = torch.arange(1, frames + 1, device=x.device)
        return x + self.encode(positions, depth, x.dtype)[None]


class SpeechEncoder(nn.Module):
    def __init__(self, n_mels=80, d_model=128, n_layers=2, vocab=64):
        super().__init__()
        self.subsample = nn.Sequential(
            nn.Conv1d(n_mels, d_model, 3, stride=2, padding=1), nn.GELU(),
            nn.Conv1d(d_model, d_model, 3, stride=2, padding=1), nn.GELU(),
        )
        self.pos = SinusoidalPositionEncoder()
        layer = nn.TransformerEncoderLayer(d_model, nhead=4, dim_feedforward=256, batch_first=True)
        self.layers = nn.TransformerEncoder(layer, n_layers)
        self.ctc_head = nn.Linear(d_model, vocab)

    def forward(self, feats):
        x = self.subsample(feats.transpose(1, 2)).transpose(1, 2)
        x = self.layers(self.pos(x * math.sqrt(x.size(-1))))
        return self.ctc_head(x).log_softmax(-1)


def fake_fbank(batch, seconds, device, dtype):
    frames = int(seconds * 100)
    t = torch.linspace(0, seconds, frames, device=device)
    bands = torch.arange(80, device=device)
    feats = torch.sin(t[None, :, None] * (bands[None, None, :] + 1) * 0.3)
    feats = feats.expand(batch, -1, -1) + 0.1 * torch.randn(batch, frames, 80, device=device)
    return feats.to(dtype)


def greedy_ctc(log_probs, blank=0):
    best = log_probs.argmax(-1)
    keep = torch.ones_like(best, dtype=torch.bool)
    keep[:, 1:] = best[:, 1:] != best[:, :-1]
    return best, keep & (best != blank)


@torch.inference_mode()
def transcribe():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    torch.manual_seed(0)
    model = SpeechEncoder().to(device=device, dtype=dtype).eval()
    feats = fake_fbank(2, 30.0, device, dtype)
    tokens, emit = greedy_ctc(model(feats).float())
    counts = emit.sum(1).tolist()
    print("frames", tokens.shape[1], "emitted tokens per utterance", counts)


if __name__ == "__main__":
    transcribe()
