# source: https://github.com/harvardnlp/pytorch-struct/issues/48
# area: device placement
# bug: the running beam scores are created on the CPU, then added to log-probabilities coming from the GPU decoder
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
BOS, EOS, VOCAB = 1, 2, 40


class TinySeq2Seq(nn.Module):
    def __init__(self, vocab=VOCAB, dim=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.encoder = nn.GRU(dim, dim, batch_first=True)
        self.decoder = nn.GRUCell(dim, dim)
        self.out = nn.Linear(dim, vocab)

    def encode(self, src):
        _, h = self.encoder(self.embed(src))
        return h.squeeze(0)

    def step(self, tokens, hidden):
        hidden = self.decoder(self.embed(tokens), hidden)
        return F.log_softmax(self.out(hidden), dim=-1), hidden


class BeamSearcher:
    def __init__(self, model, beam_size=4, max_len=12, length_penalty=0.6):
        self.model = model
        self.k = beam_size
        self.max_len = max_len
        self.alpha = length_penalty

    @torch.no_grad()
    def __call__(self, src):
        b, k = src.size(0), self.k
        hidden = self.model.encode(src).repeat_interleave(k, dim=0)
        tokens = torch.full((b * k,), BOS, dtype=torch.long, device=src.device)
        scores = torch.full((b, k), float("-inf"))  # expect: any
        scores[:, 0] = 0.0
        history = []
        for _ in range(self.max_len):
            logp, hidden = self.model.step(tokens, hidden)
            cand = scores.unsqueeze(-1) + logp.view(b, k, -1)
            scores, flat = cand.view(b, -1).topk(k, dim=-1)
            origin = torch.div(flat, VOCAB, rounding_mode="floor")
            tokens = (flat % VOCAB).view(-1)
            rows = (origin + torch.arange(b, device=src.device).unsqueeze(1) * k).view(-1)
            hidden = hidden[rows]
            history = [h[rows] for h in history] + [tokens]
        seqs = torch.stack(history, dim=1).view(b, k, -1)
        lengths = ((seqs != EOS).cumsum(-1) == torch.arange(1, self.max_len + 1, device=src.device)).sum(-1)
        normed = scores / (((5.0 + lengths) / 6.0) ** self.alpha)
        best = normed.argmax(-1)
        return seqs[torch.arange(b, device=src.device), best]


def main():
    torch.manual_seed(0)
    model = TinySeq2Seq().to(device).eval()
    searcher = BeamSearcher(model, beam_size=4)
    src = torch.randint(3, VOCAB, (8, 10), device=device)
    hyps = searcher(src)
    print(hyps.shape, hyps[0].tolist())


if __name__ == "__main__":
    main()
