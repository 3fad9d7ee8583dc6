# source: https://geek-docs.com/go-tutorials/go-ask-answer/243_hk_1709765946.html
# area: AMP
# bug: inputs are cast to half for "mixed precision" but the model stays float32 and no autocast is used
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(8, 2).to(device)
x = torch.randn(4, 8, device=device).half()
print(model(x).dtype)  # expect: any
