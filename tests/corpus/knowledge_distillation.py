"""Knowledge distillation: a teacher trained by one helper, a smaller student trained by
another against the teacher's softened outputs; each helper builds its own model and
receives the data tensors from main."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

TEMPERATURE = 3.0
ALPHA = 0.7


def make_spirals(n, generator, classes=3):
    t = torch.rand(n, generator=generator) * 3
    label = torch.arange(n) % classes
    angle = t * 0.8 + label * (2 * 3.14159 / classes)
    x = torch.stack([t * torch.cos(angle), t * torch.sin(angle)], dim=1)
    return x + 0.1 * torch.randn(n, 2, generator=generator), label


def train_teacher(x, y, epochs=4):
    teacher = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 3))
    optimizer = torch.optim.Adam(teacher.parameters(), lr=0.01)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    for _ in range(epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            F.cross_entropy(teacher(xb), yb).backward()
            optimizer.step()
    return teacher


def distillation_loss(student_logits, teacher_logits, labels):
    soft = F.kl_div(
        F.log_softmax(student_logits / TEMPERATURE, dim=1),
        F.softmax(teacher_logits / TEMPERATURE, dim=1),
        reduction="batchmean",
    ) * (TEMPERATURE ** 2)
    hard = F.cross_entropy(student_logits, labels)
    return ALPHA * soft + (1 - ALPHA) * hard


def train_student(teacher, x, y, epochs=4):
    student = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3))
    optimizer = torch.optim.Adam(student.parameters(), lr=0.01)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    teacher.eval()
    for _ in range(epochs):
        for xb, yb in loader:
            with torch.no_grad():
                teacher_logits = teacher(xb)
            optimizer.zero_grad()
            distillation_loss(student(xb), teacher_logits, yb).backward()
            optimizer.step()
    return student


def main():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    x_train, y_train = make_spirals(240, g)
    x_test, y_test = make_spirals(90, g)
    teacher = train_teacher(x_train, y_train)
    student = train_student(teacher, x_train, y_train)
    with torch.no_grad():
        teacher_loss = F.cross_entropy(teacher(x_test), y_test).item()
        student_loss = F.cross_entropy(student(x_test), y_test).item()
    print(f"teacher {teacher_loss:.4f} student {student_loss:.4f}")
    print(f"final loss {student_loss:.8f}")


if __name__ == "__main__":
    main()
