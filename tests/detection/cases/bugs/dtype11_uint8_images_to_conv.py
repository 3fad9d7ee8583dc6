# source: https://github.com/Rickyyy-zh/yolov7_3d/issues/8
# area: dtype
# bug: uint8 image arrays reach a Conv2d without conversion to float
import numpy as np
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
images = np.random.randint(0, 255, size=(4, 3, 16, 16), dtype=np.uint8)
conv = nn.Conv2d(3, 8, 3).to(device)
x = torch.from_numpy(images).to(device)
print(conv(x).shape)  # expect: TP303
