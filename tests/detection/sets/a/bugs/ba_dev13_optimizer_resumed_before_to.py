# source: https://dev-solve.com/posts/3f078da
# area: device placement
# bug: on resume the optimizer state is loaded while the model is still on the CPU (load_state_dict casts Adam's moments to the params' device at that moment), and only then is the model moved to the GPU
import os
import tempfile
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, x):
        return self.body(x)


def train_steps(model, optimizer, x, y, steps):
    for _ in range(steps):
        idx = torch.randint(0, x.size(0), (32,))
        xb, yb = x[idx].to(device), y[idx].to(device)
        loss = F.cross_entropy(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


def save_checkpoint(path, model, optimizer, epoch):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, path)


def load_checkpoint(path, model, optimizer):
    ckpt = torch.load(path, map_location="cpu")
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    return ckpt["epoch"] + 1


def main():
    x = torch.randn(256, 10)
    y = (x[:, 0] + x[:, 1] > 0).long()
    with tempfile.TemporaryDirectory() as tmp:
        ckpt_path = os.path.join(tmp, "last.pt")
        # first run: a short job that got pre-empted after one epoch
        model = Net().to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        print("first run loss", round(train_steps(model, optimizer, x, y, 10), 4))
        save_checkpoint(ckpt_path, model, optimizer, epoch=0)

        # resumed run
        model = Net()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        start_epoch = load_checkpoint(ckpt_path, model, optimizer)  # expect[resume]: any
        model.to(device)  # expect[resume]: any
        for epoch in range(start_epoch, start_epoch + 3):
            loss = train_steps(model, optimizer, x, y, 10)
            print(f"epoch {epoch} loss {loss:.4f}")
            save_checkpoint(ckpt_path, model, optimizer, epoch)


if __name__ == "__main__":
    main()
