# source: https://github.com/DeepRank/deeprank/issues/203
# area: porting & distributed
# bug: the loader strips the DataParallel prefix with str.lstrip("module."), which removes leading characters, not the prefix, mangling keys such as "embed.weight" -> "bed.weight" whenever the checkpoint came from a GPU run
import os
import tempfile

import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TextClassifier(nn.Module):
    def __init__(self, vocab=200, dim=32, n_cls=3):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, dim)
        self.encoder = nn.Sequential(nn.Linear(dim, dim), nn.ReLU())
        self.head = nn.Linear(dim, n_cls)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)))


def train_and_save(path, steps=40):
    model = TextClassifier()
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(steps):
        tokens = torch.randint(0, 200, (32, 12), device=device)
        labels = (tokens.float().mean(1) // 67).long()
        loss = nn.functional.cross_entropy(model(tokens), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save({"state_dict": model.state_dict(), "cuda": device.type == "cuda"}, path)


def load_for_inference(path):
    ckpt = torch.load(path, map_location="cpu")
    state = ckpt["state_dict"]
    if ckpt["cuda"]:
        # a prefix 'module.' is added to parameter names if DataParallel was used
        state = {name.lstrip("module."): w for name, w in state.items()}  # expect: any
    model = TextClassifier()
    model.load_state_dict(state)
    return model.eval()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "clf.pt")
        train_and_save(path)
        model = load_for_inference(path)
        with torch.no_grad():
            preds = model(torch.randint(0, 200, (8, 12))).argmax(1)
        print("predictions:", preds.tolist())
