# twin of: bugs/dk_dist04_dataparallel_prefix_transfer.py
# area: porting & distributed
# correct: the checkpoint is written from the unwrapped module, so its keys match the plain TaskModel whether or not DataParallel was used
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SentenceEncoder(nn.Module):
    def __init__(self, vocab=300, dim=48):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)

    def forward(self, tokens):
        _, h = self.rnn(self.embed(tokens))
        return h[-1]


class TaskModel(nn.Module):
    def __init__(self, n_labels):
        super().__init__()
        self.encoder = SentenceEncoder()
        self.head = nn.Linear(48, n_labels)

    def forward(self, tokens):
        return self.head(self.encoder(tokens))


def maybe_parallel(model):
    model = model.to(DEVICE)
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    return model


def make_task(n_labels, n=128, seq=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 300, (n, seq), generator=g)
    y = x[:, :3].sum(dim=1) % n_labels
    return x.to(DEVICE), y.to(DEVICE)


def fit(model, data, steps=15, lr=1e-2):
    x, y = data
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.detach()


def run_intermediate_phase(ckpt_dir):
    model = maybe_parallel(TaskModel(n_labels=3))
    fit(model, make_task(3, seed=1))
    path = os.path.join(ckpt_dir, "intermediate.pt")
    to_save = model.module if isinstance(model, nn.DataParallel) else model
    torch.save(to_save.state_dict(), path)
    return path


def load_encoder_weights(model, path):
    state = torch.load(path, map_location="cpu")
    state = {k: v for k, v in state.items() if not k.startswith("head.")}
    result = model.load_state_dict(state, strict=False)
    if result.unexpected_keys:
        print(f"warning: {len(result.unexpected_keys)} unexpected keys ignored")
    return model


def run_target_phase(path):
    model = TaskModel(n_labels=5)
    load_encoder_weights(model, path)
    model = maybe_parallel(model)
    final = fit(model, make_task(5, seed=2))
    print(f"target task loss {final.item():.4f}")


def main():
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as ckpt_dir:
        path = run_intermediate_phase(ckpt_dir)
        run_target_phase(path)


if __name__ == "__main__":
    main()
