# source: https://github.com/whittle-org/whittle/issues/306
# area: transfer & sync
# bug: predictions are pulled to Python lists with .tolist() for every batch
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(
    TensorDataset(torch.randn(40, 6), torch.randint(0, 3, (40,))),
    batch_size=10,
    pin_memory=torch.cuda.is_available(),
)
model = nn.Linear(6, 3).to(device).eval()
predictions, targets = [], []
with torch.no_grad():
    for x, y in loader:
        logits = model(x.to(device, non_blocking=True))
        predictions.extend(logits.argmax(dim=1).tolist())  # expect: TP204
        targets.extend(y.tolist())
print(sum(p == t for p, t in zip(predictions, targets)) / len(targets))
