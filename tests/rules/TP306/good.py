import torch
from torch import nn

model = nn.Linear(4, 2)
scaler = torch.amp.GradScaler("cuda")
x = torch.randn(3).half()


def build_teacher():
    teacher = nn.Linear(4, 2)
    teacher = teacher.half()  # a frozen reference, never trained
    return teacher


def train(student, teacher, batches):
    optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    for x in batches:
        loss = (student(x) - teacher(x.half()).float()).pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


def train_float32(batches):
    model = nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in batches:
        scaler.scale(model(x).sum()).backward()
        scaler.step(optimizer)
        scaler.update()


def test_half_forward():
    # another function's own model, cast to check a float16 forward: nothing the scaler steps
    model = nn.Linear(2, 2)
    model = model.half()
    assert model(torch.randn(2, 2, dtype=torch.float16)).dtype == torch.float16
