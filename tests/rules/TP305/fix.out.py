import torch
from torch.cuda.amp import GradScaler, custom_fwd

scaler = torch.amp.GradScaler("cuda")
with torch.amp.autocast("cuda", dtype=torch.float16):
    pass
with torch.amp.autocast("cpu"):
    pass
with torch.cuda.amp.autocast(True):
    pass


@torch.amp.custom_fwd(device_type="cuda")
def op(x):
    return x
