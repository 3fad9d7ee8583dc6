# twin of: bugs/cc_dist05_load_without_map_location.py
# area: porting & distributed
# correct: torch.load maps every storage to the CPU first (map_location="cpu"), then the model is moved to the target device
import os
import tempfile
import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Tagger(nn.Module):
    def __init__(self, vocab=100, dim=24, tags=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.enc = nn.LSTM(dim, dim, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * dim, tags)

    def forward(self, tokens):
        h, _ = self.enc(self.emb(tokens))
        return self.out(h)


def train_and_save(path):
    model = Tagger().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    tokens = torch.randint(0, 100, (64, 9), device=device)
    tags = tokens % 5
    for _ in range(8):
        loss = nn.functional.cross_entropy(model(tokens).reshape(-1, 5), tags.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save({"state_dict": model.state_dict(), "vocab_size": 100}, path)


def load_for_inference(path, target_device):
    checkpoint = torch.load(path, map_location="cpu")
    model = Tagger(vocab=checkpoint["vocab_size"])
    model.load_state_dict(checkpoint["state_dict"])
    return model.to(target_device).eval()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tagger.pt")
        train_and_save(path)
        # deployment side: typically a CPU box
        model = load_for_inference(path, torch.device("cpu"))
        with torch.no_grad():
            pred = model(torch.randint(0, 100, (2, 9))).argmax(-1)
        print(pred.tolist())


if __name__ == "__main__":
    main()
