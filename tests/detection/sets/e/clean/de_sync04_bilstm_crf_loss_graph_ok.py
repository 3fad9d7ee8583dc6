# twin of: bugs/de_sync04_bilstm_crf_loss_graph.py
# area: transfer & sync
# correct: the running total is built from detached losses on the device and read back once per epoch, so no graph is kept alive
import torch
import torch.nn as nn

START, STOP = 0, 1


class BiLSTMCRF(nn.Module):
    def __init__(self, vocab_size, n_tags, emb=32, hidden=32):
        super().__init__()
        self.n_tags = n_tags
        self.embed = nn.Embedding(vocab_size, emb)
        self.lstm = nn.LSTM(emb, hidden // 2, bidirectional=True, batch_first=True)
        self.to_tags = nn.Linear(hidden, n_tags)
        self.trans = nn.Parameter(torch.randn(n_tags, n_tags) * 0.1)

    def emissions(self, tokens):
        h, _ = self.lstm(self.embed(tokens))
        return self.to_tags(h)  # [B, T, K]

    def log_partition(self, feats):
        alpha = feats[:, 0] + self.trans[START].unsqueeze(0)
        for t in range(1, feats.size(1)):
            scores = alpha.unsqueeze(2) + self.trans.unsqueeze(0) + feats[:, t].unsqueeze(1)
            alpha = torch.logsumexp(scores, dim=1)
        return torch.logsumexp(alpha + self.trans[:, STOP].unsqueeze(0), dim=1)

    def gold_score(self, feats, tags):
        emit = feats.gather(2, tags.unsqueeze(2)).squeeze(2).sum(1)
        trans = self.trans[tags[:, :-1], tags[:, 1:]].sum(1)
        return emit + trans + self.trans[START, tags[:, 0]] + self.trans[tags[:, -1], STOP]

    def neg_log_likelihood(self, tokens, tags):
        feats = self.emissions(tokens)
        return (self.log_partition(feats) - self.gold_score(feats, tags)).mean()


def toy_corpus(n_sent=256, seq_len=12, vocab=50, n_tags=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab, (n_sent, seq_len), generator=g)
    tags = 2 + tokens % (n_tags - 2)
    return tokens, tags


def train(device, epochs=3, batch_size=32):
    tokens, tags = toy_corpus()
    model = BiLSTMCRF(vocab_size=50, n_tags=6).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, weight_decay=1e-4)
    for epoch in range(epochs):
        sum_nll = torch.zeros((), device=device)
        perm = torch.randperm(tokens.size(0))
        for i in range(0, tokens.size(0), batch_size):
            idx = perm[i:i + batch_size]
            tok = tokens[idx].to(device)
            tg = tags[idx].to(device)
            model.zero_grad()
            nll = model.neg_log_likelihood(tok, tg)
            nll.backward()
            opt.step()
            sum_nll += nll.detach()
        n_batches = (tokens.size(0) + batch_size - 1) // batch_size
        print(f"epoch {epoch}: nll={float(sum_nll) / n_batches:.4f}")


if __name__ == "__main__":
    train(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
