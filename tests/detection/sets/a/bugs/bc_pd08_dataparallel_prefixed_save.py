# source: https://github.com/pytorch/pytorch/issues/9176
# area: porting & distributed
# bug: save_checkpoint stores the DataParallel wrapper's state_dict, so on multi-GPU machines every key gets a "module." prefix and the export step cannot load it into the bare model
import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class AudioTagger(nn.Module):
    def __init__(self, n_mels=20, n_tags=5):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(n_mels, 32, 5, padding=2), nn.ReLU(), nn.AdaptiveMaxPool1d(1))
        self.fc = nn.Linear(32, n_tags)

    def forward(self, spec):
        return self.fc(self.conv(spec).squeeze(-1))


def build_model():
    model = AudioTagger()
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    return model.to(device)


def save_checkpoint(model, optimizer, epoch, path):
    torch.save({"epoch": epoch, "model": model.state_dict(), "optim": optimizer.state_dict()}, path)  # expect: any


def export_for_serving(ckpt_path, out_path):
    ckpt = torch.load(ckpt_path, map_location="cpu")
    serving_model = AudioTagger()
    serving_model.load_state_dict(ckpt["model"])
    scripted = torch.jit.script(serving_model.eval())
    scripted.save(out_path)
    return serving_model


def main():
    spec = torch.randn(96, 20, 40)
    tags = (spec.mean(2)[:, :5] > 0).float()
    loader = DataLoader(TensorDataset(spec, tags), batch_size=16, shuffle=True)
    model = build_model()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    with tempfile.TemporaryDirectory() as tmp:
        ckpt_path = os.path.join(tmp, "last.pt")
        for epoch in range(2):
            for x, y in loader:
                loss = nn.functional.binary_cross_entropy_with_logits(model(x.to(device)), y.to(device))
                opt.zero_grad()
                loss.backward()
                opt.step()
            save_checkpoint(model, opt, epoch, ckpt_path)
        serving = export_for_serving(ckpt_path, os.path.join(tmp, "tagger.pt"))
        print("exported; sample tags:", (torch.sigmoid(serving(spec[:2])) > 0.5).int().tolist())


if __name__ == "__main__":
    main()
