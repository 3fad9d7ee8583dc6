# source: https://github.com/ultralytics/yolov3/issues/1085
# area: dtype
# bug: the detector is converted with model.half() when running on the GPU, but the images coming out of the DataLoader stay float32, so the first conv fails with "Input type (torch.cuda.FloatTensor) and weight type (torch.cuda.HalfTensor) should be the same"
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
half = device.type != "cpu"  # half precision only supported on CUDA


class ImageFolderStub(Dataset):
    """Stands in for a folder of uint8 images already letterboxed to 64x64."""

    def __init__(self, n=12, size=64):
        self.images = torch.randint(0, 256, (n, 3, size, size), dtype=torch.uint8)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        img = self.images[idx].float() / 255.0
        return img, idx


def conv_bn(c_in, c_out, stride):
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out), nn.SiLU())


class TinyDetector(nn.Module):
    def __init__(self, n_anchors=3, n_classes=5):
        super().__init__()
        self.backbone = nn.Sequential(conv_bn(3, 16, 2), conv_bn(16, 32, 2), conv_bn(32, 64, 2))
        self.head = nn.Conv2d(64, n_anchors * (5 + n_classes), 1)
        self.no = 5 + n_classes

    def forward(self, x):
        p = self.head(self.backbone(x))
        b, _, h, w = p.shape
        return p.view(b, -1, self.no, h, w).permute(0, 1, 3, 4, 2).reshape(b, -1, self.no)


def filter_boxes(pred, conf_thres=0.5):
    obj = pred[..., 4].sigmoid()
    return [p[o > conf_thres] for p, o in zip(pred, obj)]


@torch.no_grad()
def detect(model, loader):
    results = {}
    for imgs, idxs in loader:
        imgs = imgs.to(device, non_blocking=True)  # expect[half]: any
        pred = model(imgs)  # expect[half]: any
        for i, boxes in zip(idxs.tolist(), filter_boxes(pred.float())):
            results[i] = len(boxes)
    return results


if __name__ == "__main__":
    model = TinyDetector().to(device).eval()
    if half:
        model.half()  # to FP16
    loader = DataLoader(ImageFolderStub(), batch_size=4)
    counts = detect(model, loader)
    print("boxes per image:", counts)
