# source: https://github.com/pytorch/tutorials/issues/3331
# area: AMP
# bug: torch.cuda.amp.autocast is deprecated (FutureWarning) in favour of torch.amp.autocast
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(5, 5).to(device).eval()
with torch.no_grad(), torch.cuda.amp.autocast(enabled=device.type == "cuda"):  # expect: TP305
    out = model(torch.randn(2, 5, device=device))
print(out.dtype)
