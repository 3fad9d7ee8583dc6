import torch.nn as nn


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(8, 8), nn.ReLU()]
        self.heads = {"a": nn.Linear(8, 1), "b": nn.Linear(8, 2)}
        self.blocks = [nn.Linear(8, 8) for _ in range(3)]
        self.towers = {name: nn.Linear(8, 1) for name in ("x", "y")}
        self.experts = []
        for _ in range(2):
            self.experts.append(nn.Linear(8, 8))
