# twin of: bugs/ca_dev14_class_weights_loss_cpu.py
# area: device placement
# correct: CrossEntropyLoss registers weight as a buffer, so criterion.to(device) moves the CPU class weights onto the device
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

NUM_CLASSES = 3


def make_imbalanced(n=300):
    y = torch.multinomial(torch.tensor([0.7, 0.2, 0.1]), n, replacement=True)
    x = torch.randn(n, 10) + y.unsqueeze(1).float()
    return x, y


def compute_class_weights(labels, num_classes):
    counts = torch.bincount(labels, minlength=num_classes).float()
    return counts.sum() / (num_classes * counts.clamp(min=1))


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, NUM_CLASSES))

    def forward(self, x):
        return self.body(x)


def main():
    x, y = make_imbalanced()
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    weights = compute_class_weights(y, NUM_CLASSES)
    print("class weights", weights.tolist())

    model = Classifier().to(device)
    criterion = nn.CrossEntropyLoss(weight=weights).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(3):
        total, n = 0.0, 0
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            loss = criterion(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * xb.size(0)
            n += xb.size(0)
        print(f"epoch {epoch} weighted loss {total / n:.4f}")


if __name__ == "__main__":
    main()
