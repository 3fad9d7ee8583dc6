# source: https://github.com/gungui98/Pytorch-Depthwise-Conv3d/issues/3
# area: AMP
# bug: the custom depthwise-conv3d autograd Function has no custom_fwd/custom_bwd, so under fp16 autocast on a GPU its backward mixes a Half grad_output with the Float weight and fails with a dtype mismatch
import torch
import torch.nn as nn
import torch.nn.functional as F


class DepthwiseConv3dFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, padding):  # expect[w]: any
        ctx.save_for_backward(x, weight)
        ctx.padding = padding
        return F.conv3d(x, weight, bias, padding=padding, groups=x.shape[1])

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        groups = x.shape[1]
        grad_input = F.conv_transpose3d(grad_output, weight, padding=ctx.padding, groups=groups)  # expect[w]: any
        grad_weight = torch.nn.grad.conv3d_weight(x, weight.shape, grad_output, padding=ctx.padding, groups=groups)
        grad_bias = grad_output.sum(dim=(0, 2, 3, 4))
        return grad_input, grad_weight, grad_bias, None


class DepthwiseConv3d(nn.Module):
    def __init__(self, channels, kernel_size=3):
        super().__init__()
        self.padding = kernel_size // 2
        self.weight = nn.Parameter(torch.randn(channels, 1, kernel_size, kernel_size, kernel_size) * 0.1)
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        return DepthwiseConv3dFunction.apply(x, self.weight, self.bias, self.padding)


class SeparableBlock3d(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.dw = DepthwiseConv3d(cin)
        self.pw = nn.Conv3d(cin, cout, 1)
        self.bn = nn.BatchNorm3d(cout)

    def forward(self, x):
        return F.relu(self.bn(self.pw(self.dw(x))))


class TinyVideoNet(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.stem = nn.Conv3d(3, 16, 3, stride=(1, 2, 2), padding=1)
        self.blocks = nn.Sequential(SeparableBlock3d(16, 32), nn.MaxPool3d(2), SeparableBlock3d(32, 32))
        self.head = nn.Linear(32, num_classes)

    def forward(self, clip):
        x = self.blocks(F.relu(self.stem(clip)))
        return self.head(x.mean(dim=(2, 3, 4)))


def make_clips(n=18, frames=8, size=24, num_classes=5):
    clips = torch.randn(n, 3, frames, size, size)
    labels = torch.randint(0, num_classes, (n,))
    return clips, labels


def train_epoch(model, clips, labels, optimizer, scaler, device, use_amp, batch=6):
    model.train()
    total = torch.zeros((), device=device)
    for i in range(0, clips.shape[0], batch):
        x = clips[i:i + batch].to(device)
        y = labels[i:i + batch].to(device)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        total += loss.detach()
    return total / (clips.shape[0] // batch)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model = TinyVideoNet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    clips, labels = make_clips()
    for epoch in range(2):
        loss = train_epoch(model, clips, labels, optimizer, scaler, device, use_amp)
        print(f"epoch {epoch} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
