import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Calibrated(nn.Module):
    def __init__(self, n_classes, weight):
        super().__init__()
        self.head = nn.Linear(16, n_classes)
        # made on the device inside the Parameter: still a registered leaf
        self.log_temp = nn.Parameter(torch.zeros(1, device=device))
        self.bias = nn.Parameter(torch.randn(n_classes).to(device))
        # .to("cpu") and .float() of a CPU float Parameter return the Parameter itself
        self.scale = nn.Parameter(torch.ones(n_classes)).to("cpu")
        self.gate = nn.Parameter(weight).float()
        self.plain = nn.Parameter(torch.ones(n_classes))

    def forward(self, x):
        return self.head(x) * self.scale / self.log_temp.exp()


model = Calibrated(3, torch.ones(3)).to(device)
p = nn.Parameter(torch.ones(2))
p.data = p.data.to(device)
moved = model.plain.to(device)  # a registered Parameter used as a tensor: not its creation


def stylize(content, device, steps=10):
    image = (torch.randn_like(content) * 1e-3).to(device).requires_grad_(True)
    noise = torch.zeros(3, 8, requires_grad=True, device=device)
    target = content.detach().requires_grad_(False).to(device)
    optimizer = torch.optim.Adam([image, noise], lr=0.03)
    for _ in range(steps):
        optimizer.zero_grad()
        (image - content).pow(2).sum().backward()
        optimizer.step()
    return image, target


def gradient_flows_through_an_input(model):
    inputs = torch.rand(10, 16, requires_grad=True).cuda()
    model(inputs).sum().backward()  # only the graph: the copy need not be a leaf
