# twin of: bugs/dl_sync02_state_buffer_unpack.py
# area: transfer & sync
# correct: all device->host copies are queued first and the stream is synchronised once before the CPU tensors are read
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn

comm_device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
ALIGN = 8


def _aligned(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def dict_to_tensor(state, device):
    """Pack a flat dict of tensors into one uint8 buffer plus a small metadata list."""
    meta, offset = [], 0
    for name, t in state.items():
        nbytes = t.numel() * t.element_size()
        meta.append((name, t.dtype, tuple(t.shape), offset, nbytes))
        offset += _aligned(nbytes)
    buf = torch.zeros(offset, dtype=torch.uint8, device=device)
    for name, dtype, shape, off, nbytes in meta:
        src = state[name].detach().to(device).contiguous().view(-1).view(torch.uint8)
        buf[off:off + nbytes].copy_(src)
    return buf, meta


def tensor_to_dict(buf, meta, target_device, out=None):
    """Rebuild tensors from the packed buffer; optionally write into existing tensors of `out`."""
    result = {} if out is None else out
    staged = {}
    for name, dtype, shape, off, nbytes in meta:
        view = buf[off:off + nbytes].view(dtype).view(shape)
        staged[name] = view.to(target_device, non_blocking=True)
    if buf.device.type == "cuda" and target_device.type == "cpu":
        torch.cuda.synchronize(buf.device)
    for name, moved in staged.items():
        if name in result:
            result[name].copy_(moved)
        else:
            result[name] = moved.clone()
    return result


def broadcast_state(buf, src=0):
    if dist.is_available() and dist.is_initialized():
        dist.broadcast(buf, src=src)
    return buf


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(500, 64)
        self.block = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64))
        self.norm = nn.BatchNorm1d(64)

    def forward(self, ids):
        h = self.embed(ids).mean(1)
        return self.norm(h + self.block(h))


def main():
    model = Encoder().to(comm_device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(5):
        ids = torch.randint(0, 500, (32, 12), device=comm_device)
        loss = model(ids).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    buf, meta = dict_to_tensor(model.state_dict(), comm_device)
    buf = broadcast_state(buf)

    cpu_copy = {k: torch.empty_like(v, device="cpu") for k, v in model.state_dict().items()}
    cpu_state = tensor_to_dict(buf, meta, torch.device("cpu"), out=cpu_copy)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "encoder.pt")
        torch.save(cpu_state, path)
        restored = Encoder()
        restored.load_state_dict(torch.load(path))
    same = all(torch.equal(restored.state_dict()[k], v.cpu()) for k, v in model.state_dict().items())
    print("checkpoint roundtrip ok:", same)


if __name__ == "__main__":
    main()
