# source: https://github.com/batra-mlp-lab/visdial-challenge-starter-pytorch/pull/34
# area: transfer & sync
# bug: torch.cuda.empty_cache() is called after every batch, which synchronizes the device and throws away the allocator cache each step
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class SyntheticVisDial(Dataset):
    """Image region features, a tokenized question and 20 candidate answers per round."""

    def __init__(self, n=96, regions=36, feat_dim=128, q_len=12, opts=20, opt_len=8, vocab=500):
        g = torch.Generator().manual_seed(1)
        self.img = torch.randn(n, regions, feat_dim, generator=g)
        self.ques = torch.randint(1, vocab, (n, q_len), generator=g)
        self.opts = torch.randint(1, vocab, (n, opts, opt_len), generator=g)
        self.ans_ind = torch.randint(0, opts, (n,), generator=g)

    def __len__(self):
        return self.img.shape[0]

    def __getitem__(self, i):
        return {"img_feat": self.img[i], "ques": self.ques[i], "opt": self.opts[i], "ans_ind": self.ans_ind[i]}


class LateFusionEncoder(nn.Module):
    def __init__(self, vocab=500, emb=64, hidden=128, feat_dim=128):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb, padding_idx=0)
        self.ques_rnn = nn.LSTM(emb, hidden, batch_first=True)
        self.img_proj = nn.Linear(feat_dim, hidden)
        self.fusion = nn.Linear(2 * hidden, hidden)

    def forward(self, batch):
        _, (h, _) = self.ques_rnn(self.embed(batch["ques"]))
        q = h[-1]
        attn = torch.softmax((self.img_proj(batch["img_feat"]) @ q.unsqueeze(-1)).squeeze(-1), dim=1)
        img = (attn.unsqueeze(-1) * self.img_proj(batch["img_feat"])).sum(1)
        return torch.tanh(self.fusion(torch.cat([q, img], dim=-1)))


class DiscriminativeDecoder(nn.Module):
    def __init__(self, embed, hidden=128):
        super().__init__()
        self.embed = embed
        self.opt_rnn = nn.LSTM(embed.embedding_dim, hidden, batch_first=True)

    def forward(self, enc, opts):
        b, n_opt, length = opts.shape
        _, (h, _) = self.opt_rnn(self.embed(opts.view(b * n_opt, length)))
        opt_feat = h[-1].view(b, n_opt, -1)
        return (opt_feat * enc.unsqueeze(1)).sum(-1)


def train(config):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(SyntheticVisDial(), batch_size=config["batch_size"], shuffle=True, drop_last=True)
    encoder = LateFusionEncoder().to(device)
    decoder = DiscriminativeDecoder(encoder.embed).to(device)
    params = list(encoder.parameters()) + list(decoder.opt_rnn.parameters())
    optimizer = torch.optim.Adam(params, lr=config["lr"])
    criterion = nn.CrossEntropyLoss()

    for epoch in range(config["num_epochs"]):
        epoch_loss = torch.zeros((), device=device)
        for i, batch in enumerate(loader):
            batch = {k: v.to(device) for k, v in batch.items()}
            optimizer.zero_grad()
            scores = decoder(encoder(batch), batch["opt"])
            loss = criterion(scores, batch["ans_ind"])
            loss.backward()
            optimizer.step()
            epoch_loss += loss.detach()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()  # expect: any
        print(f"epoch {epoch}: mean loss {(epoch_loss / (i + 1)).item():.4f}")


if __name__ == "__main__":
    train({"batch_size": 32, "lr": 1e-3, "num_epochs": 2})
