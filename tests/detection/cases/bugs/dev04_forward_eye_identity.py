# source: https://github.com/tsugumi-sys/SA-ConvLSTM-Pytorch/pull/26
# area: device placement
# bug: an orthogonality penalty compares W W^T with torch.eye made on the CPU inside forward
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class OrthoLinear(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        w = self.proj.weight
        eye = torch.eye(w.shape[0])  # expect[eye]: TP103
        penalty = ((w @ w.t()) - eye).pow(2).sum()  # expect[eye]: TP150
        return self.proj(x), penalty


model = OrthoLinear(6).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(3):
    x = torch.randn(10, 6, device=device)
    out, penalty = model(x)
    loss = out.pow(2).mean() + 0.1 * penalty
    opt.zero_grad()
    loss.backward()
    opt.step()
