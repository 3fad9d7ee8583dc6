import copy

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


class EMA(nn.Module):
    def __init__(self, model):
        super().__init__()
        self._online = [model]  # kept out of this module's state on purpose
        self.shadow = copy.deepcopy(model)


ema = EMA(nn.Linear(2, 2))
