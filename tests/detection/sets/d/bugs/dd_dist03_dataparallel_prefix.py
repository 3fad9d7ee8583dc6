# source: https://github.com/abeardear/pytorch-YOLO-v1/issues/4
# area: porting & distributed
# bug: on a GPU the net is wrapped in DataParallel and its state_dict is saved with "module." keys, which the bare predictor cannot load
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

GRID, BOXES, CLASSES = 4, 2, 5


class TinyYolo(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.LeakyReLU(0.1), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.LeakyReLU(0.1), nn.MaxPool2d(2),
        )
        self.head = nn.Conv2d(32, BOXES * 5 + CLASSES, 1)

    def forward(self, x):
        out = self.head(self.features(x))
        return out.permute(0, 2, 3, 1)


def yolo_loss(pred, target):
    obj = target[..., 4:5]
    coord = F.mse_loss(pred[..., :4] * obj, target[..., :4] * obj, reduction="sum")
    conf = F.mse_loss(torch.sigmoid(pred[..., 4:5]), obj, reduction="sum")
    cls = F.cross_entropy(pred[..., BOXES * 5:].reshape(-1, CLASSES),
                          target[..., 5].long().reshape(-1), reduction="sum")
    return (coord + conf + 0.5 * cls) / pred.size(0)


def make_batch(n, g):
    images = torch.rand(n, 3, GRID * 4, GRID * 4, generator=g)
    target = torch.zeros(n, GRID, GRID, 6)
    target[..., :4] = torch.rand(n, GRID, GRID, 4, generator=g)
    target[..., 4] = (torch.rand(n, GRID, GRID, generator=g) > 0.7).float()
    target[..., 5] = torch.randint(0, CLASSES, (n, GRID, GRID), generator=g).float()
    return images, target


def train(ckpt_path, device, steps=20):
    g = torch.Generator().manual_seed(0)
    net = TinyYolo()
    if torch.cuda.is_available():
        net = nn.DataParallel(net)
    net.to(device)
    opt = torch.optim.SGD(net.parameters(), lr=1e-2, momentum=0.9)
    net.train()
    for _ in range(steps):
        images, target = make_batch(8, g)
        loss = yolo_loss(net(images.to(device)), target.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save(net.state_dict(), ckpt_path)  # expect[w]: any


@torch.no_grad()
def predict(ckpt_path, device, conf_thresh=0.2):
    model = TinyYolo()
    state = torch.load(ckpt_path, map_location=device)
    model.load_state_dict(state)  # expect[w]: any
    model.to(device).eval()
    g = torch.Generator().manual_seed(1)
    images, _ = make_batch(2, g)
    out = model(images.to(device))
    conf = torch.sigmoid(out[..., 4])
    cls = out[..., BOXES * 5:].argmax(-1)
    keep = conf > conf_thresh
    return conf[keep].cpu(), cls[keep].cpu()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "yolo.pth")
        train(ckpt, device)
        scores, classes = predict(ckpt, device)
    print(f"{scores.numel()} detections above threshold, classes {classes[:5].tolist()}")


if __name__ == "__main__":
    main()
