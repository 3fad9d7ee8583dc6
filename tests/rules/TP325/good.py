import numpy as np
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
dtype = torch.float16 if device.type == "cuda" else torch.float32


class Detector:
    def __init__(self, model):
        self.model = model.to(device).eval()
        if device.type == "cuda":
            self.model.half()

    def preprocess(self, frame):
        img = torch.from_numpy(np.ascontiguousarray(frame)).to(device)
        return img.to(dtype) / 255.0

    def __call__(self, frame):
        return self.model(self.preprocess(frame))


def evaluate(model, dataset):
    model = model.to(device)
    with torch.autocast(device_type=device.type, dtype=torch.float16):
        for images, _ in DataLoader(dataset, batch_size=8):
            model(images.to(device))
