# source: https://github.com/wengong-jin/hgraph2graph/issues/40
# area: device placement
# bug: the accuracy helpers return CUDA tensors and np.array([...]) calls Tensor.__array__ -> numpy() on them, which fails for device tensors
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TaggerModel(nn.Module):
    """Predicts a token tag and a sequence-level label from random 'atom' features."""

    def __init__(self, in_dim=12, hid=48, n_tags=6, n_labels=3):
        super().__init__()
        self.enc = nn.GRU(in_dim, hid, batch_first=True)
        self.tag_head = nn.Linear(hid, n_tags)
        self.seq_head = nn.Linear(hid, n_labels)

    def forward(self, x):
        h, last = self.enc(x)
        return self.tag_head(h), self.seq_head(last[-1])


def tag_accuracy(tag_logits, tags):
    return (tag_logits.argmax(-1) == tags).float().mean()


def seq_accuracy(seq_logits, labels):
    return (seq_logits.argmax(-1) == labels).float().mean()


def main():
    model = TaggerModel().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    x_all = torch.randn(160, 10, 12)
    tags_all = torch.randint(0, 6, (160, 10))
    labels_all = torch.randint(0, 3, (160,))
    meters = np.zeros(3)
    print_iter = 5
    for it, i in enumerate(range(0, 160, 16), start=1):
        x = x_all[i:i + 16].to(device)
        tags, labels = tags_all[i:i + 16].to(device), labels_all[i:i + 16].to(device)
        tag_logits, seq_logits = model(x)
        loss = F.cross_entropy(tag_logits.reshape(-1, 6), tags.reshape(-1)) + F.cross_entropy(seq_logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        tacc = tag_accuracy(tag_logits.detach(), tags)
        sacc = seq_accuracy(seq_logits.detach(), labels)
        meters = meters + np.array([loss.item(), tacc * 100, sacc * 100])  # expect: any
        if it % print_iter == 0:
            meters /= print_iter
            print("[%d] loss %.3f tag-acc %.2f seq-acc %.2f" % (it, meters[0], meters[1], meters[2]))
            meters *= 0


if __name__ == "__main__":
    main()
