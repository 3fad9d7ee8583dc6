import torch
import torch.nn as nn
from torch import optim

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def load_checkpoint(path, model, optimizer):
    ckpt = torch.load(path, map_location="cpu")
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    return ckpt["epoch"]


def resume(path):
    model = nn.Linear(4, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    ckpt = torch.load(path, map_location="cpu")
    optimizer.load_state_dict(ckpt["optimizer"])
    model.to(device)
    return model, optimizer


def resume_with_helper(path):
    net = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    opt = optim.SGD([{"params": net.parameters()}], lr=0.1, momentum=0.9)
    epoch = load_checkpoint(path, net, opt)
    net = net.cuda()
    return net, opt, epoch


def resume_assigned(path, state):
    encoder = nn.Linear(4, 4)
    enc_optimizer = optim.AdamW(encoder.parameters())
    enc_optimizer.load_state_dict(state)
    encoder = encoder.to(device)
    return encoder


class Trainer:
    def __init__(self, model, path, device):
        self.model = model
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.path = path
        self._resume()
        self.model.to(device)

    def _resume(self):
        ckpt = torch.load(self.path, map_location="cpu")
        self.model.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["optimizer"])


class SetupTrainer:
    def __init__(self, path, resume=False):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.net = torch.nn.Linear(4, 2)
        self.opt = torch.optim.Adam(self.net.parameters())
        self.path = path
        if resume:
            self.restore()
        self.setup()

    def restore(self):
        state = torch.load(self.path, map_location="cpu")
        self.opt.load_state_dict(state["opt"])

    def setup(self):
        self.net.to(self.device)


def build_from_checkpoint(ckpt):
    model = Net()
    optimizer = torch.optim.Adam(model.parameters())
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    return model, optimizer


def resume(ckpt, device):
    model, optimizer = build_from_checkpoint(ckpt)
    model.to(device)
    return model, optimizer
