# source: https://github.com/resemble-ai/chatterbox/pull/418
# area: porting & distributed
# bug: the decoder weights are torch.load-ed without map_location, so a checkpoint written on a CUDA machine fails to deserialize on a CPU-only host even though the device falls back to CPU
import os
import tempfile

import torch
import torch.nn as nn


class VoiceEncoder(nn.Module):
    def __init__(self, n_mels=40, hidden=64, embed=32):
        super().__init__()
        self.lstm = nn.LSTM(n_mels, hidden, batch_first=True)
        self.proj = nn.Linear(hidden, embed)

    def forward(self, mels):
        _, (h, _) = self.lstm(mels)
        e = self.proj(h[-1])
        return e / e.norm(dim=-1, keepdim=True).clamp_min(1e-6)


class MelDecoder(nn.Module):
    def __init__(self, vocab=40, embed=32, hidden=64, n_mels=40):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.cond = nn.Linear(embed, hidden)
        self.net = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, n_mels)

    def forward(self, tokens, spk):
        x = self.tok(tokens) + self.cond(spk).unsqueeze(1)
        y, _ = self.net(x)
        return self.out(y)


class TinyTTS:
    def __init__(self, ve, dec, device):
        self.ve = ve.to(device).eval()
        self.dec = dec.to(device).eval()
        self.device = device

    @classmethod
    def from_local(cls, ckpt_dir, device):
        ve = VoiceEncoder()
        ve.load_state_dict(torch.load(os.path.join(ckpt_dir, "ve.pt"), map_location=device, weights_only=True))
        dec = MelDecoder()
        dec_state = torch.load(os.path.join(ckpt_dir, "decoder.pt"), weights_only=True)  # expect: any
        dec.load_state_dict(dec_state)
        return cls(ve, dec, device)

    @torch.no_grad()
    def synthesize(self, text, ref_mels):
        ids = torch.tensor([[ord(c) % 40 for c in text.lower()]], device=self.device)
        spk = self.ve(ref_mels.to(self.device))
        return self.dec(ids, spk).squeeze(0).cpu()


def export_release(ckpt_dir):
    torch.manual_seed(3)
    torch.save(VoiceEncoder().state_dict(), os.path.join(ckpt_dir, "ve.pt"))
    torch.save(MelDecoder().state_dict(), os.path.join(ckpt_dir, "decoder.pt"))


def pick_device(requested):
    if requested == "cuda" and not torch.cuda.is_available():
        print("CUDA not available, falling back to CPU")
        return torch.device("cpu")
    return torch.device(requested)


def main(requested_device="cuda"):
    device = pick_device(requested_device)
    with tempfile.TemporaryDirectory() as ckpt_dir:
        export_release(ckpt_dir)
        tts = TinyTTS.from_local(ckpt_dir, device)
        ref = torch.randn(1, 120, 40)
        mel = tts.synthesize("hello from the other side", ref)
        print(f"generated mel frames: {tuple(mel.shape)}")


if __name__ == "__main__":
    main()
