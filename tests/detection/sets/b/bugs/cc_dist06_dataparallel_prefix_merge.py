# source: https://kiwix.lema.org/stackoverflow.com_en_all_2023-11/questions/61854165/why-must-use-dataparallel-when-testing
# area: porting & distributed
# bug: the checkpoint is saved from the nn.DataParallel wrapper (keys start with "module."), and the loader merges it into the plain model's state dict keeping only matching keys, so no weight is loaded and the test model stays random
import os
import tempfile
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SegNet(nn.Module):
    def __init__(self, classes=3):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.head = nn.Conv2d(8, classes, 1)

    def forward(self, x):
        return self.head(F.relu(self.conv2(F.relu(self.conv1(x)))))


def train(ckpt_path):
    model = nn.DataParallel(SegNet()).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x = torch.randn(8, 1, 12, 12, device=device)
    y = (x[:, 0] > 0).long() + (x[:, 0] > 1).long()
    for _ in range(15):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save(model.state_dict(), ckpt_path)  # expect[prefix]: any
    return x, y


def load_pretrained(model, ckpt_path):
    pretrained_dict = torch.load(ckpt_path, map_location="cpu")
    model_dict = model.state_dict()
    pretrained_dict = {k: v for k, v in pretrained_dict.items() if k in model_dict}  # expect[prefix]: any
    model_dict.update(pretrained_dict)
    model.load_state_dict(model_dict)
    return model


def evaluate(model, x, y):
    model.eval()
    with torch.no_grad():
        pred = model(x).argmax(1)
    return (pred == y).float().mean().item()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "segnet.pth")
        x, y = train(path)
        test_model = load_pretrained(SegNet(), path).to(device)
        print("pixel acc of reloaded model:", round(evaluate(test_model, x, y), 3))


if __name__ == "__main__":
    main()
