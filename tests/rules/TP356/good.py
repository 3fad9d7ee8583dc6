import torch


def finetune(model, batches, device):
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    model = model.to(device=device, dtype=dtype)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, eps=1e-4)  # float16 holds it
    for x in batches:
        model(x.to(device, dtype)).float().pow(2).mean().backward()
        optimizer.step()

