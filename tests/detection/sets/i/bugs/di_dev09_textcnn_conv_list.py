# source: https://github.com/pytorch/pytorch/issues/1053
# area: device placement
# bug: the n-gram convolutions are kept in a plain Python list, so they are not registered submodules and stay on the CPU after model.to(device)
import torch
import torch.nn as nn
import torch.nn.functional as F


class TextCNNConfig:
    vocab_size = 500
    embed_dim = 48
    num_filters = 16
    kernel_sizes = (3, 4, 5)
    num_classes = 3
    dropout = 0.5
    max_len = 40


class TextCNN(nn.Module):
    def __init__(self, cfg: TextCNNConfig):
        super().__init__()
        self.embedding = nn.Embedding(cfg.vocab_size, cfg.embed_dim, padding_idx=0)
        self.convs = [nn.Conv1d(cfg.embed_dim, cfg.num_filters, k) for k in cfg.kernel_sizes]  # expect: any
        self.dropout = nn.Dropout(cfg.dropout)
        self.fc = nn.Linear(cfg.num_filters * len(cfg.kernel_sizes), cfg.num_classes)

    def forward(self, tokens):
        x = self.embedding(tokens).transpose(1, 2)
        pooled = [F.relu(conv(x)).amax(dim=2) for conv in self.convs]
        return self.fc(self.dropout(torch.cat(pooled, dim=1)))


def make_corpus(cfg, n_docs, seed=0):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, cfg.num_classes, (n_docs,), generator=g)
    tokens = torch.randint(1, cfg.vocab_size, (n_docs, cfg.max_len), generator=g)
    cue = 10 + labels * 7
    tokens[:, 5] = cue
    tokens[:, 17] = cue + 1
    lengths = torch.randint(20, cfg.max_len + 1, (n_docs,), generator=g)
    pad = torch.arange(cfg.max_len)[None, :] >= lengths[:, None]
    tokens[pad] = 0
    return tokens, labels


def iterate(tokens, labels, batch_size, device, shuffle=True):
    order = torch.randperm(tokens.shape[0]) if shuffle else torch.arange(tokens.shape[0])
    for i in range(0, len(order), batch_size):
        idx = order[i:i + batch_size]
        yield tokens[idx].to(device), labels[idx].to(device)


def train(model, data, device, epochs=3, lr=1e-3):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for epoch in range(epochs):
        model.train()
        for tokens, labels in iterate(*data, 32, device):
            loss = F.cross_entropy(model(tokens), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()


@torch.no_grad()
def accuracy(model, data, device):
    model.eval()
    correct = torch.zeros((), device=device)
    for tokens, labels in iterate(*data, 128, device, shuffle=False):
        correct += (model(tokens).argmax(dim=1) == labels).sum()
    return correct.item() / data[0].shape[0]


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = TextCNNConfig()
    model = TextCNN(cfg).to(device)
    train_data, val_data = make_corpus(cfg, 600, seed=0), make_corpus(cfg, 200, seed=1)
    train(model, train_data, device)
    print(f"val accuracy {accuracy(model, val_data, device):.3f}")
