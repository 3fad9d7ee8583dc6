"""Host syncs inside the training loop."""

import torch

w = torch.ones(4, device="cuda", requires_grad=True)
total = 0.0
for _ in range(3):
    loss = (w * 2).sum()
    loss.backward()
    total += loss.item()  # expect: TP204
    if loss > 100:  # expect: TP206
        break
    torch.cuda.synchronize()  # expect: TP207
    preds = w.detach().cpu()  # expect: TP205
print(total)
