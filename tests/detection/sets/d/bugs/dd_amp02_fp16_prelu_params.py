# source: https://github.com/mk-minchul/AdaFace/issues/127
# area: AMP
# bug: the PReLU activations are built with float16 parameters on CUDA, so their gradients are fp16 and GradScaler.step raises "Attempting to unscale FP16 gradients" on a GPU
import torch
import torch.nn as nn
import torch.nn.functional as F


class BackboneConfig:
    def __init__(self, device):
        self.device = device
        self.use_amp = device.type == "cuda"
        self.act_dtype = torch.float16 if self.use_amp else torch.float32
        self.widths = (16, 32, 64)
        self.embedding_dim = 64
        self.num_ids = 50


class IRBlock(nn.Module):
    def __init__(self, c_in, c_out, stride, act_dtype):
        super().__init__()
        self.bn0 = nn.BatchNorm2d(c_in)
        self.conv1 = nn.Conv2d(c_in, c_out, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.act = nn.PReLU(c_out, dtype=act_dtype)  # expect: any
        self.conv2 = nn.Conv2d(c_out, c_out, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.short = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        res = self.bn2(self.conv2(self.act(self.bn1(self.conv1(self.bn0(x))))))
        return res + self.short(x)


class FaceBackbone(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, cfg.widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(cfg.widths[0]))
        blocks, c = [], cfg.widths[0]
        for w in cfg.widths:
            blocks.append(IRBlock(c, w, 2, cfg.act_dtype))
            c = w
        self.body = nn.Sequential(*blocks)
        self.neck = nn.Linear(c * 4 * 4, cfg.embedding_dim)

    def forward(self, x):
        x = self.body(self.stem(x))
        return F.normalize(self.neck(x.flatten(1)), dim=1)


class CosFaceHead(nn.Module):
    def __init__(self, dim, num_ids, margin=0.35, scale=30.0):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_ids, dim) * 0.01)
        self.margin, self.scale = margin, scale

    def forward(self, emb, labels):
        cos = emb @ F.normalize(self.weight, dim=1).t()
        onehot = F.one_hot(labels, cos.size(1)).to(cos.dtype)
        return self.scale * (cos - self.margin * onehot)


def train(cfg, steps=4):
    backbone = FaceBackbone(cfg).to(cfg.device)
    head = CosFaceHead(cfg.embedding_dim, cfg.num_ids).to(cfg.device)
    params = list(backbone.parameters()) + list(head.parameters())
    optimizer = torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=5e-4)
    scaler = torch.amp.GradScaler("cuda", enabled=cfg.use_amp)
    for step in range(steps):
        images = torch.randn(8, 3, 32, 32, device=cfg.device)
        labels = torch.randint(0, cfg.num_ids, (8,), device=cfg.device)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=cfg.device.type, dtype=torch.float16, enabled=cfg.use_amp):
            logits = head(backbone(images), labels)
            loss = F.cross_entropy(logits.float(), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    return loss.detach()


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    final = train(BackboneConfig(device))
    print("final loss", float(final))
