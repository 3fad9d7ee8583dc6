# source: https://github.com/yandexdataschool/Practical_RL/pull/170
# area: device placement
# bug: self.device is read from the parameters inside __init__ (always CPU) and never updated by .to(device), so translate() builds its BOS tokens on the CPU
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

VOCAB, BOS, EOS, HID = 20, 1, 2, 32


class Seq2Seq(nn.Module):
    def __init__(self, vocab=VOCAB, hid=HID):
        super().__init__()
        self.emb_in = nn.Embedding(vocab, hid)
        self.emb_out = nn.Embedding(vocab, hid)
        self.enc = nn.GRU(hid, hid, batch_first=True)
        self.dec = nn.GRUCell(hid, hid)
        self.logits = nn.Linear(hid, vocab)
        self.device = next(self.parameters()).device  # expect[dev]: any

    def forward(self, src, tgt_in):
        _, h = self.enc(self.emb_in(src))
        h = h[0]
        outs = []
        for t in range(tgt_in.size(1)):
            h = self.dec(self.emb_out(tgt_in[:, t]), h)
            outs.append(self.logits(h))
        return torch.stack(outs, dim=1)

    @torch.no_grad()
    def translate(self, src, max_len=8):
        _, h = self.enc(self.emb_in(src))
        h = h[0]
        tok = torch.full((src.size(0),), BOS, dtype=torch.long, device=self.device)  # expect[dev]: any
        out = []
        for _ in range(max_len):
            h = self.dec(self.emb_out(tok), h)
            tok = self.logits(h).argmax(-1)
            out.append(tok)
        return torch.stack(out, dim=1)


def make_batch(b=16, n=6):
    src = torch.randint(3, VOCAB, (b, n))
    tgt = src.flip(1)
    bos = torch.full((b, 1), BOS, dtype=torch.long)
    return src.to(device), torch.cat([bos, tgt[:, :-1]], 1).to(device), tgt.to(device)


def main():
    model = Seq2Seq().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(40):
        src, tgt_in, tgt_out = make_batch()
        loss = F.cross_entropy(model(src, tgt_in).reshape(-1, VOCAB), tgt_out.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    src, _, tgt_out = make_batch(4)
    pred = model.translate(src, max_len=tgt_out.size(1))
    print("loss", round(loss.item(), 4), "exact match", (pred == tgt_out).float().mean().item())


if __name__ == "__main__":
    main()
