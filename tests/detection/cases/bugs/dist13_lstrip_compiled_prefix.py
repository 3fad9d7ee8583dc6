# source: https://github.com/karpathy/nanochat/pull/234
# area: porting & distributed
# bug: the loader removes torch.compile's "_orig_mod." prefix with str.lstrip, which strips characters, not the prefix: "output_projection" loses its "o" and the output layer keeps random weights
import os
import tempfile

import torch
from torch import nn

torch.manual_seed(0)


class TinyLM(nn.Module):
    def __init__(self, vocab=50, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.output_projection = nn.Linear(dim, vocab)

    def forward(self, tokens):
        return self.output_projection(self.embed(tokens))


def train_and_save(path):
    model = TinyLM()
    compiled = torch.compile(model, backend="eager")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(5):
        tokens = torch.randint(0, 50, (8, 6))
        loss = nn.functional.cross_entropy(model(tokens).flatten(0, 1), tokens.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save(compiled.state_dict(), path)


def load(path):
    state = torch.load(path, map_location="cpu")
    state = {k.lstrip("_orig_mod."): v for k, v in state.items()}  # expect: TP408
    model = TinyLM()
    result = model.load_state_dict(state, strict=False)
    return model, result


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ckpt.pt")
        train_and_save(path)
        model, result = load(path)
        print("missing:", result.missing_keys)
