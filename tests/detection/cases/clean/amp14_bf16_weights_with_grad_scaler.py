# twin of: bugs/amp14_bf16_weights_with_grad_scaler.py
# area: AMP
# correct: the model is cast to bfloat16 and trained without a GradScaler (bfloat16 keeps float32's range, so no loss scaling is needed)
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Adapter(nn.Module):
    def __init__(self, dim, classes):
        super().__init__()
        self.proj = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.head = nn.Linear(dim, classes)

    def forward(self, feats):
        return self.head(feats + self.proj(feats))


model = Adapter(48, 5).to(device)
model = model.to(torch.bfloat16)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

for step in range(20):
    feats = torch.randn(16, 48, device=device, dtype=torch.bfloat16)
    labels = torch.randint(0, 5, (16,), device=device)
    loss = F.cross_entropy(model(feats).float(), labels)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    if step % 5 == 0:
        print(f"step {step} loss {loss.item():.4f}")
