# twin of: bugs/di_dev02_resume_optimizer_state.py
# area: device placement
# correct: the models are moved to the device before the optimizers are built, so load_state_dict casts the Adam state onto the parameters' device
import os
import tempfile
import torch
import torch.nn as nn
import torch.nn.functional as F


class Config:
    vocab = 60
    hidden = 48
    lr = 1e-3
    seq_len = 10
    batch = 16
    steps_per_epoch = 20


class EncoderRNN(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab, cfg.hidden)
        self.gru = nn.GRU(cfg.hidden, cfg.hidden, batch_first=True)

    def forward(self, src):
        _, h = self.gru(self.embed(src))
        return h


class DecoderRNN(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab, cfg.hidden)
        self.gru = nn.GRU(cfg.hidden, cfg.hidden, batch_first=True)
        self.out = nn.Linear(cfg.hidden, cfg.vocab)

    def forward(self, tgt_in, h):
        y, _ = self.gru(self.embed(tgt_in), h)
        return self.out(y)


def synthetic_pairs(cfg, device, n_batches):
    g = torch.Generator().manual_seed(1)
    src = torch.randint(1, cfg.vocab, (n_batches, cfg.batch, cfg.seq_len), generator=g)
    tgt = src.flip(-1)
    return src.to(device), tgt.to(device)


def train_epoch(encoder, decoder, enc_opt, dec_opt, src_all, tgt_all):
    total = torch.zeros((), device=src_all.device)
    for src, tgt in zip(src_all, tgt_all):
        enc_opt.zero_grad()
        dec_opt.zero_grad()
        h = encoder(src)
        logits = decoder(tgt[:, :-1], h)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt[:, 1:].reshape(-1))
        loss.backward()
        enc_opt.step()
        dec_opt.step()
        total += loss.detach()
    return (total / len(src_all)).item()


def save_checkpoint(path, encoder, decoder, enc_opt, dec_opt, epoch):
    torch.save({"epoch": epoch,
                "encoder": encoder.state_dict(), "decoder": decoder.state_dict(),
                "enc_opt": enc_opt.state_dict(), "dec_opt": dec_opt.state_dict()}, path)


def build_from_checkpoint(path, cfg, device):
    ckpt = torch.load(path, map_location="cpu")
    encoder, decoder = EncoderRNN(cfg), DecoderRNN(cfg)
    encoder.load_state_dict(ckpt["encoder"])
    decoder.load_state_dict(ckpt["decoder"])
    encoder.to(device)
    decoder.to(device)
    enc_opt = torch.optim.Adam(encoder.parameters(), lr=cfg.lr)
    dec_opt = torch.optim.Adam(decoder.parameters(), lr=cfg.lr)
    enc_opt.load_state_dict(ckpt["enc_opt"])
    dec_opt.load_state_dict(ckpt["dec_opt"])
    return encoder, decoder, enc_opt, dec_opt, ckpt["epoch"]


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = Config()
    src_all, tgt_all = synthetic_pairs(cfg, device, cfg.steps_per_epoch)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "chatbot_ckpt.tar")
        encoder, decoder = EncoderRNN(cfg).to(device), DecoderRNN(cfg).to(device)
        enc_opt = torch.optim.Adam(encoder.parameters(), lr=cfg.lr)
        dec_opt = torch.optim.Adam(decoder.parameters(), lr=cfg.lr)
        loss = train_epoch(encoder, decoder, enc_opt, dec_opt, src_all, tgt_all)
        print(f"epoch 0 loss {loss:.3f}")
        save_checkpoint(path, encoder, decoder, enc_opt, dec_opt, epoch=0)

        encoder, decoder, enc_opt, dec_opt, start = build_from_checkpoint(path, cfg, device)
        for epoch in range(start + 1, start + 3):
            loss = train_epoch(encoder, decoder, enc_opt, dec_opt, src_all, tgt_all)
            print(f"epoch {epoch} loss {loss:.3f}")


if __name__ == "__main__":
    main()
