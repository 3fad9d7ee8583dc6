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
