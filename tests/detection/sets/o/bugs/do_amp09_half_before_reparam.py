# source: https://github.com/meituan/YOLOv6/issues/418
# area: AMP
# bug: the detector is cast to half before the RepVGG blocks are fused; the fused conv is rebuilt in float32 (identity kernel is float32), so half inputs on the GPU hit float32 weights
import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn(c_in, c_out, k, stride):
    return nn.Sequential(nn.Conv2d(c_in, c_out, k, stride, k // 2, bias=False), nn.BatchNorm2d(c_out))


class RepVGGBlock(nn.Module):
    def __init__(self, c_in, c_out, stride=1):
        super().__init__()
        self.c_in, self.c_out, self.stride = c_in, c_out, stride
        self.rbr_identity = nn.BatchNorm2d(c_in) if c_in == c_out and stride == 1 else None
        self.rbr_dense = conv_bn(c_in, c_out, 3, stride)
        self.rbr_1x1 = conv_bn(c_in, c_out, 1, stride)
        self.rbr_reparam = None

    def forward(self, x):
        if self.rbr_reparam is not None:
            return F.relu(self.rbr_reparam(x))
        idt = self.rbr_identity(x) if self.rbr_identity is not None else 0
        return F.relu(self.rbr_dense(x) + self.rbr_1x1(x) + idt)

    def _fuse_bn(self, kernel, bn):
        std = (bn.running_var + bn.eps).sqrt()
        t = (bn.weight / std).reshape(-1, 1, 1, 1)
        return kernel * t, bn.bias - bn.running_mean * bn.weight / std

    def switch_to_deploy(self):
        w = self.rbr_dense[0].weight
        k3, b3 = self._fuse_bn(w, self.rbr_dense[1])
        k1, b1 = self._fuse_bn(F.pad(self.rbr_1x1[0].weight, [1, 1, 1, 1]), self.rbr_1x1[1])
        kernel, bias = k3 + k1, b3 + b1
        if self.rbr_identity is not None:
            id_kernel = torch.zeros(self.c_in, self.c_in, 3, 3, device=w.device)  # expect[ord]: any
            ch = torch.arange(self.c_in, device=w.device)
            id_kernel[ch, ch, 1, 1] = 1.0
            kid, bid = self._fuse_bn(id_kernel, self.rbr_identity)
            kernel, bias = kernel + kid, bias + bid
        self.rbr_reparam = nn.Conv2d(self.c_in, self.c_out, 3, self.stride, 1, device=kernel.device)
        self.rbr_reparam.weight.data = kernel.detach()
        self.rbr_reparam.bias.data = bias.detach()
        del self.rbr_dense, self.rbr_1x1, self.rbr_identity
        self.rbr_identity = None


class TinyYOLO(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.backbone = nn.Sequential(RepVGGBlock(3, 16, 2), RepVGGBlock(16, 16), RepVGGBlock(16, 32, 2), RepVGGBlock(32, 32))
        self.head = nn.Conv2d(32, 5 + num_classes, 1)

    def forward(self, x):
        return self.head(self.backbone(x)).flatten(2).transpose(1, 2)


class Inferer:
    def __init__(self, model, img_size=64, half=True):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.img_size = img_size
        self.model = model.to(self.device).eval()
        self.half = half and self.device.type != "cpu"
        if self.half:
            self.model.half()  # expect[ord]: any
        else:
            self.model.float()
        if self.device.type != "cpu":
            dummy = torch.zeros(1, 3, img_size, img_size, device=self.device)
            self.model(dummy.type_as(next(self.model.parameters())))
        self.model_switch(self.model)  # expect[ord]: any

    @staticmethod
    def model_switch(model):
        for m in model.modules():
            if isinstance(m, RepVGGBlock):
                m.switch_to_deploy()

    @torch.no_grad()
    def infer(self, frames_uint8, conf_thres=0.25):
        img = frames_uint8.to(self.device, non_blocking=True)
        img = img.half() if self.half else img.float()
        img /= 255.0
        pred = self.model(img)
        scores = pred[..., 4:5].sigmoid() * pred[..., 5:].sigmoid()
        return [s.amax(-1) > conf_thres for s in scores]


if __name__ == "__main__":
    torch.manual_seed(0)
    inferer = Inferer(TinyYOLO(), img_size=64, half=True)
    frames = torch.randint(0, 256, (4, 3, 64, 64), dtype=torch.uint8)
    if torch.cuda.is_available():
        frames = frames.pin_memory()
    keep = inferer.infer(frames)
    print("detections per image:", torch.stack([k.sum() for k in keep]).tolist())
