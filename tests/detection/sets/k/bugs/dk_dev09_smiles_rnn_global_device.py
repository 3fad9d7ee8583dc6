# source: https://github.com/rociomer/dl-chem-101/issues/10
# area: device placement
# bug: the RNN builds its initial hidden state on the global get_device() (cuda when a GPU exists) instead of the model's own device, so sampling from a model loaded with map_location="cpu" crashes on a GPU machine
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = ["<pad>", "<bos>", "<eos>", "C", "c", "N", "O", "(", ")", "=", "1", "2", "F", "Cl"]
STOI = {s: i for i, s in enumerate(VOCAB)}
TRAIN_SMILES = [["C", "C", "O"], ["c", "1", "c", "c", "c", "c", "c", "1"], ["C", "C", "(", "=", "O", ")", "N"],
                ["O", "=", "C", "(", "O", ")", "C"], ["C", "N", "C", "Cl"], ["F", "C", "(", "F", ")", "F"]]


def get_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SmilesRNN(nn.Module):
    def __init__(self, vocab_size, emb_dim=32, hidden_size=64, n_layers=2):
        super().__init__()
        self.hidden_size, self.n_layers = hidden_size, n_layers
        self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=0)
        self.rnn = nn.GRU(emb_dim, hidden_size, n_layers, batch_first=True)
        self.out = nn.Linear(hidden_size, vocab_size)

    def init_hidden(self, batch_size):
        return torch.zeros(self.n_layers, batch_size, self.hidden_size, device=get_device())  # expect: any

    def forward(self, tokens, hidden=None):
        if hidden is None:
            hidden = self.init_hidden(tokens.shape[0])
        output, hidden = self.rnn(self.embedding(tokens), hidden)
        return self.out(output), hidden


def encode_batch(smiles_list):
    seqs = [[STOI["<bos>"]] + [STOI[t] for t in s] + [STOI["<eos>"]] for s in smiles_list]
    width = max(len(s) for s in seqs)
    return torch.tensor([s + [0] * (width - len(s)) for s in seqs])


def train(model, device, steps=60):
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    batch = encode_batch(TRAIN_SMILES).to(device)
    for _ in range(steps):
        logits, _ = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, len(VOCAB)), batch[:, 1:].reshape(-1), ignore_index=0)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.detach()


def load_model(path, device):
    model = SmilesRNN(len(VOCAB))
    model.load_state_dict(torch.load(path, map_location=device))
    return model.to(device).eval()


@torch.no_grad()
def sample(model, n, max_len=20, temperature=1.0):
    device = next(model.parameters()).device
    tokens = torch.full((n, 1), STOI["<bos>"], dtype=torch.long, device=device)
    hidden, generated = None, []
    for _ in range(max_len):
        logits, hidden = model(tokens[:, -1:], hidden)
        probs = F.softmax(logits[:, -1] / temperature, dim=-1)
        tokens = torch.cat([tokens, torch.multinomial(probs, 1)], dim=1)
    for row in tokens[:, 1:].tolist():
        out = []
        for idx in row:
            if idx == STOI["<eos>"]:
                break
            out.append(VOCAB[idx])
        generated.append("".join(out))
    return generated


def main():
    torch.manual_seed(0)
    device = get_device()
    model = SmilesRNN(len(VOCAB)).to(device)
    final_loss = train(model, device)
    print(f"final train loss {final_loss.item():.3f}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "smiles_rnn.pt")
        torch.save(model.state_dict(), path)
        sampler = load_model(path, torch.device("cpu"))
        for smi in sample(sampler, 5):
            print("sampled:", smi)


if __name__ == "__main__":
    main()
