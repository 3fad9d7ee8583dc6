import torch


def step(model, x, optimizer):
    scaler = torch.amp.GradScaler("cuda")
    loss = model(x).sum()
    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.step(optimizer)
    scaler.update()
    image_scale = torch.nn.Upsample(scale_factor=2)
