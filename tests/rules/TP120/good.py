import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def resume(path):
    model = nn.Linear(4, 2).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    optimizer.load_state_dict(torch.load(path, map_location="cpu")["optimizer"])
    return model, optimizer


def resume_moved_first(path):
    model = nn.Linear(4, 2)
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    optimizer.load_state_dict(torch.load(path, map_location="cpu")["optimizer"])
    model.to(device)  # a second move: a no-op
    return model, optimizer


def resume_on_cpu(path):
    model = nn.Linear(4, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    optimizer.load_state_dict(torch.load(path, map_location="cpu")["optimizer"])
    model.to("cpu")
    return model, optimizer


def resume_scheduler(path, optimizer, model):
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)
    scheduler.load_state_dict(torch.load(path)["scheduler"])
    model.to(device)
    return scheduler


def resume_other_model(path):
    teacher = nn.Linear(4, 2)
    student = nn.Linear(4, 2).to(device)
    optimizer = torch.optim.Adam(student.parameters(), lr=1e-3)
    optimizer.load_state_dict(torch.load(path, map_location="cpu")["optimizer"])
    teacher.to(device)  # not the model the optimizer holds
    return teacher, student, optimizer


class Trainer:
    def __init__(self, model, path, device):
        self.model = model.to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.path = path
        self._resume()
        self.model.to(device)  # moved before too: a no-op here

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
        self.setup()
        if resume:
            self.restore()

    def restore(self):
        state = torch.load(self.path, map_location="cpu")
        self.opt.load_state_dict(state["opt"])

    def setup(self):
        self.net.to(self.device)


def build_on_device(ckpt, device):
    model = Net().to(device)
    optimizer = torch.optim.Adam(model.parameters())
    optimizer.load_state_dict(ckpt["optimizer"])
    return model, optimizer


def resume_on_device(ckpt, device):
    model, optimizer = build_on_device(ckpt, device)
    model.to(device)
    return model, optimizer
