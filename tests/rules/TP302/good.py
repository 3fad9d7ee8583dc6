import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train(model, x):
    model.to(device)
    return model(x.float().to(device))


def gradcheck_input():
    return torch.randn(4, 4).double()  # no accelerator in this function


def same_device(x):
    return torch.zeros(3, dtype=torch.float64, device=x.device)  # wherever x is


class RunningEntropy:
    """A metric: float64 sums kept for precision, a few numbers per step."""

    def __init__(self, n):
        self.total = torch.zeros(n, dtype=torch.float64, device=device)

    def update(self, p):
        self.total += p.double().sum(0)

    def compute(self):
        return self.total.tolist()

torch.set_default_dtype(torch.float32)


class ConfusionMatrix:
    def __init__(self, n, device):
        self.mat = torch.zeros(n, n, device=device)

    def update(self, pred, target):
        self.mat += torch.bincount(target * len(self.mat) + pred).view_as(self.mat)

    def compute_iou(self):
        mat = self.mat.double()  # a metric's precision: a few numbers per step
        return mat.diag() / (mat.sum(0) + mat.sum(1) - mat.diag())
