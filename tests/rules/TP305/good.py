import torch

scaler = torch.amp.GradScaler("cuda")
with torch.amp.autocast("cuda", dtype=torch.float16):
    pass
with torch.autocast("cpu"):
    pass
