import torch
from torch.cuda.amp import GradScaler, custom_fwd

scaler = GradScaler()
with torch.cuda.amp.autocast(dtype=torch.float16):
    pass
with torch.cpu.amp.autocast():
    pass
with torch.cuda.amp.autocast(True):
    pass


@custom_fwd
def op(x):
    return x
