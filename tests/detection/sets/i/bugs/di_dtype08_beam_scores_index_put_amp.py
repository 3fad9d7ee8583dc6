# source: https://github.com/Noble-Lab/casanovo/issues/508
# area: dtype
# bug: the beam-score buffer is allocated as float32 but the decoder output under CUDA autocast is float16; the masked index_put fails with "Index put requires the source and destination dtypes match" on the GPU
import torch
import torch.nn as nn
import torch.nn.functional as F


class DecodeConfig:
    vocab_size = 28
    d_model = 64
    beam_size = 4
    max_len = 12
    stop_token = 0


class SpectrumEncoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.peak_proj = nn.Linear(2, cfg.d_model)
        self.layer = nn.TransformerEncoderLayer(cfg.d_model, nhead=4, dim_feedforward=128, batch_first=True)

    def forward(self, peaks):
        return self.layer(self.peak_proj(peaks))


class PeptideDecoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size + 1, cfg.d_model)
        self.layer = nn.TransformerDecoderLayer(cfg.d_model, nhead=4, dim_feedforward=128, batch_first=True)
        self.out = nn.Linear(cfg.d_model, cfg.vocab_size)

    def forward(self, tokens, memory):
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1], device=tokens.device)
        return self.out(self.layer(self.embed(tokens), memory, tgt_mask=mask))


class BeamSearcher:
    def __init__(self, encoder, decoder, cfg):
        self.encoder, self.decoder, self.cfg = encoder, decoder, cfg

    @torch.no_grad()
    def decode(self, peaks):
        cfg = self.cfg
        n = peaks.shape[0] * cfg.beam_size
        memory = self.encoder(peaks).repeat_interleave(cfg.beam_size, dim=0)
        tokens = torch.full((n, cfg.max_len + 1), cfg.vocab_size, dtype=torch.long, device=peaks.device)
        scores = torch.zeros(n, cfg.max_len, cfg.vocab_size, device=peaks.device)  # expect[w]: any
        finished = torch.zeros(n, dtype=torch.bool, device=peaks.device)
        for step in range(cfg.max_len):
            active = ~finished
            step_logits = self.decoder(tokens[:, : step + 1], memory)[:, -1]
            scores[active, step, :] = step_logits[active]  # expect[w]: any
            scores[:, step] = F.log_softmax(scores[:, step], dim=-1)
            cum = scores[:, : step + 1].max(-1).values.sum(-1)
            if step == 0:
                best = scores[:: cfg.beam_size, 0].topk(cfg.beam_size, dim=-1).indices.reshape(-1)
            else:
                best = scores[:, step].argmax(-1)
            tokens[:, step + 1] = torch.where(active, best, tokens[:, step + 1])
            finished |= best.eq(cfg.stop_token)
        cum = cum.view(-1, cfg.beam_size)
        pick = cum.argmax(-1) + torch.arange(cum.shape[0], device=cum.device) * cfg.beam_size
        return tokens[pick, 1:], cum.max(-1).values


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = DecodeConfig()
    encoder = SpectrumEncoder(cfg).to(device).eval()
    decoder = PeptideDecoder(cfg).to(device).eval()
    searcher = BeamSearcher(encoder, decoder, cfg)
    peaks = torch.rand(3, 50, 2)
    with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=device.type == "cuda"):
        peptides, score = searcher.decode(peaks.to(device))
    print(peptides.shape, score.float().cpu().tolist())


if __name__ == "__main__":
    main()
