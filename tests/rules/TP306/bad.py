import torch
from torch import nn

model = nn.Linear(4, 2).half()
scaler = torch.amp.GradScaler("cuda")


def build(fp16):
    net = nn.Linear(4, 2)
    if fp16:
        net = net.half()
    return net


def train(net, batches):
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    for x in batches:
        scaler.scale(net(x).sum()).backward()
        scaler.step(optimizer)
        scaler.update()


def load_for_finetuning(device):
    model = nn.Linear(4, 2)
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    return model.to(device=device, dtype=dtype)


def finetune(batches, device):
    model = load_for_finetuning(device)
    optimizer = torch.optim.AdamW(model.parameters())
    scaler = torch.amp.GradScaler("cuda")
    for x in batches:
        scaler.scale(model(x).sum()).backward()
        scaler.step(optimizer)
        scaler.update()


def pick_dtype(device):
    return torch.float16 if device.type == "cuda" else torch.float32


def load_models(device):
    dtype = pick_dtype(device)
    encoder = nn.Linear(8, 8).to(device=device, dtype=dtype)
    return encoder, dtype


def finetune(device, x):
    encoder, dtype = load_models(device)
    params = list(encoder.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    scaler.scale(encoder(x).sum()).backward()
    scaler.step(opt)
    scaler.update()
