import copy
import math

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train(dataset):
    loader = DataLoader(dataset, pin_memory=True)
    model = nn.Linear(4, 3).to(device)
    weight = torch.tensor([1.0, 2.0, 3.0], device=device)
    criterion = nn.CrossEntropyLoss(weight=weight)
    smooth = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0])).to(device)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        logits = model(x)
        loss = criterion(logits, y) + smooth(logits, y)
        # 0-dim CPU tensors may meet device tensors (no copy, no sync)
        scaled = logits / torch.tensor(math.sqrt(4.0)) + torch.ones(4).sum()
        mask = torch.rand(4, 3, device=device) < 0.1
        masked = logits.masked_fill(mask, 0.0)
        padded = torch.cat([logits, torch.zeros(4, 2, device=logits.device)], dim=1)
        index = logits[torch.arange(4)]  # indexing with CPU indices is allowed


def moved_by_helper():
    model = nn.Sequential(nn.Linear(4, 2))
    place(model)
    return model(torch.randn(8, 4, device=device))


def wrapped(model):
    ddp = DDP(nn.Linear(4, 2).to(device))
    return ddp(torch.randn(8, 4, device=device))


def place(model):
    model.to(device)


def collated(dataset):
    loader = DataLoader(dataset, collate_fn=lambda b: [t.to(device) for t in b])
    model = nn.Linear(4, 3).to(device)
    criterion = nn.CrossEntropyLoss()
    for x, y in loader:
        loss = criterion(model(x), y)  # the collate_fn moved them


def fit(model, loader, criterion):
    for x, y in loader:
        criterion(model(x.to(device)), y.to(device)).backward()


def class_weighted(model, loader, counts):
    weights = 1.0 / torch.bincount(counts).float()
    moved = nn.CrossEntropyLoss(weight=weights).to(device)
    fit(model, loader, moved)
    later = nn.CrossEntropyLoss(weight=weights)
    later.to(device)
    fit(model, loader, later)
    on_device = nn.CrossEntropyLoss(weight=weights.to(device))
    fit(model, loader, on_device)


class Averaged:
    def __init__(self, model, decay=0.99):
        self.copy = copy.deepcopy(model)
        self.decay = decay


def with_ema():
    model = nn.Linear(4, 2)
    model.to(device)
    ema = Averaged(model)
    best = copy.deepcopy(model)
    return ema, best


def copy_moved_too():
    model = nn.Linear(4, 2)
    shadow = copy.deepcopy(model)
    model.to(device)
    shadow.to(device)
    return shadow


def accumulated(loader):
    model = nn.Linear(4, 1).to(device)
    running = torch.tensor(0.0, device=device)
    for x, y in loader:
        running += model(x.to(device)).sum()
        running += torch.tensor(1.0)  # a 0-dim CPU value read by a device op
    return running


class SpeechRecognizer(nn.Module):
    """CTC takes its targets and lengths on the host: CUDA moves or reads them itself."""

    def __init__(self):
        super().__init__()
        self.head = nn.Linear(8, 6)
        self.ctc = nn.CTCLoss(zero_infinity=True)

    def loss(self, features, labels):
        log_probs = self.head(features).log_softmax(2)
        steps, batch = log_probs.shape[:2]
        input_lengths = torch.full((batch,), steps, dtype=torch.long)
        target_lengths = torch.full((batch,), labels.size(1), dtype=torch.long)
        return self.ctc(log_probs, labels.cpu(), input_lengths, target_lengths)


def ctc_step(model, features, labels):
    model = model.to(device)
    log_probs = model.head(features.to(device)).log_softmax(2)
    lengths = torch.full((log_probs.size(1),), log_probs.size(0), dtype=torch.long)
    label_lengths = torch.full((labels.size(0),), labels.size(1), dtype=torch.long)
    return nn.functional.ctc_loss(log_probs, labels, lengths, label_lengths)


def ctc_epoch(model, steps, batch_size):
    model = model.to(device)
    criterion = nn.CTCLoss(blank=0, zero_infinity=True)
    for _ in range(steps):
        images = torch.randn(batch_size, 1, 32, 64, device=device)
        labels = torch.randint(1, 6, (batch_size, 5), device=device)
        log_probs = model(images)
        input_lengths = torch.full((batch_size,), log_probs.size(0), dtype=torch.long)
        target_lengths = torch.full((batch_size,), labels.size(1), dtype=torch.long)
        loss = criterion(log_probs, labels, input_lengths, target_lengths)
        loss.backward()
