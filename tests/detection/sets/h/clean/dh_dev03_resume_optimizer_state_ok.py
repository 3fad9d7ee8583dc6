# twin of: bugs/dh_dev03_resume_optimizer_state.py
# area: device placement
# correct: the model is moved to the device before the optimizer is built and its state loaded, so load_state_dict casts the Adam moments onto the parameters' device
import argparse
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class AffordanceHead(nn.Module):
    def __init__(self, point_dim=3, img_dim=32, hidden=64, n_aff=8):
        super().__init__()
        self.point_enc = nn.Sequential(nn.Linear(point_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.img_enc = nn.Sequential(nn.Linear(img_dim, hidden), nn.ReLU())
        self.fuse = nn.Linear(2 * hidden, hidden)
        self.aff_logits = nn.Linear(hidden, n_aff)
        self.per_point = nn.Linear(hidden, 1)

    def forward(self, points, img_feat):
        p = self.point_enc(points)
        g = self.img_enc(img_feat).unsqueeze(1).expand(-1, p.shape[1], -1)
        h = F.relu(self.fuse(torch.cat([p, g], dim=-1)))
        return self.aff_logits(h.mean(dim=1)), torch.sigmoid(self.per_point(h)).squeeze(-1)


def synthetic_batch(batch_size=8, n_points=256):
    points = torch.randn(batch_size, n_points, 3)
    img_feat = torch.randn(batch_size, 32)
    aff_label = torch.randint(0, 8, (batch_size,))
    heat = (points[..., 2] > 0).float()
    return points, img_feat, aff_label, heat


def train_epoch(model, optimizer, device, steps=5):
    model.train()
    running = torch.zeros((), device=device)
    for _ in range(steps):
        points, img_feat, aff_label, heat = (t.to(device) for t in synthetic_batch())
        logits, pred_heat = model(points, img_feat)
        loss = F.cross_entropy(logits, aff_label) + F.binary_cross_entropy(pred_heat, heat)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running += loss.detach()
    return (running / steps).item()


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--resume", default=None)
    parser.add_argument("--save_dir", default=None)
    args = parser.parse_args(argv)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = AffordanceHead().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    start_epoch = 0
    if args.resume:
        ckpt = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        start_epoch = ckpt["epoch"] + 1

    for epoch in range(start_epoch, start_epoch + args.epochs):
        loss = train_epoch(model, optimizer, device)
        print(f"epoch {epoch} loss {loss:.4f}")
        if args.save_dir:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch},
                       os.path.join(args.save_dir, "last.pt"))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        main(["--save_dir", tmp, "--epochs", "1"])
        main(["--save_dir", tmp, "--epochs", "1", "--resume", os.path.join(tmp, "last.pt")])
