# source: https://github.com/HorizonRobotics/alf/pull/1736
# area: porting & distributed
# bug: the port switches the default tensor type to torch.cuda.FloatTensor (deprecated, global)
import torch
from torch import nn

if torch.cuda.is_available():
    torch.set_default_tensor_type(torch.cuda.FloatTensor)  # expect: TP113
model = nn.Linear(3, 3)
print(model(torch.randn(2, 3)).device)
