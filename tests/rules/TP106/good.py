import torch.nn as nn


class Stack(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8), nn.ReLU()])
        self.sizes = [8, 16]
        self.names = []
        self.names.append("trunk")
        self.widths = {name: 8 for name in ("x", "y")}
        self.experts = nn.ModuleList()
        self.experts.append(nn.Linear(8, 8))
