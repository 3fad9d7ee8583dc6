# source: https://github.com/QwenLM/Qwen-VL/issues/372
# area: AMP
# bug: the fine-tuning script casts the whole model to bfloat16 to save memory, yet keeps the enabled GradScaler of its float16 days; on CUDA unscale_ fails on the bfloat16 gradients ("_amp_foreach_non_finite_check_and_unscale_cuda" not implemented for 'BFloat16'), and bfloat16 needs no loss scaling anyway
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_scaler = device.type == "cuda"


class Adapter(nn.Module):
    def __init__(self, dim, classes):
        super().__init__()
        self.proj = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.head = nn.Linear(dim, classes)

    def forward(self, feats):
        return self.head(feats + self.proj(feats))


model = Adapter(48, 5).to(device)
model = model.to(torch.bfloat16)  # expect[bf16]: TP308
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cuda", enabled=use_scaler)  # expect[bf16]: TP308

for step in range(20):
    feats = torch.randn(16, 48, device=device, dtype=torch.bfloat16)
    labels = torch.randint(0, 5, (16,), device=device)
    loss = F.cross_entropy(model(feats).float(), labels)
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    if step % 5 == 0:
        print(f"step {step} loss {loss.item():.4f}")
