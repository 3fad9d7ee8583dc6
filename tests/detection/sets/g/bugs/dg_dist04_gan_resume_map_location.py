# source: https://github.com/rosinality/stylegan2-pytorch/issues/36
# area: porting & distributed
# bug: every torchrun rank calls torch.load on the resume checkpoint without map_location, so all ranks materialise the saved cuda:0 tensors on GPU 0
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class Generator(nn.Module):
    def __init__(self, latent=64, out_dim=256):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(latent, 256), nn.LeakyReLU(0.2),
                                 nn.Linear(256, 256), nn.LeakyReLU(0.2), nn.Linear(256, out_dim), nn.Tanh())

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Module):
    def __init__(self, in_dim=256):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, 256), nn.LeakyReLU(0.2), nn.Linear(256, 1))

    def forward(self, x):
        return self.net(x)


def setup(args):
    args.local_rank = int(os.environ.get("LOCAL_RANK", 0))
    args.distributed = "RANK" in os.environ and dist.is_available()
    if torch.cuda.is_available():
        torch.cuda.set_device(args.local_rank)
        args.device = torch.device("cuda", args.local_rank)
    else:
        args.device = torch.device("cpu")
    if args.distributed:
        dist.init_process_group("nccl" if args.device.type == "cuda" else "gloo")


def shared_run_dir(args):
    holder = [tempfile.mkdtemp(prefix="gan_run_") if not args.distributed or dist.get_rank() == 0 else None]
    if args.distributed:
        dist.broadcast_object_list(holder, src=0)
    return holder[0]


def save_checkpoint(path, step, g, d, g_optim, d_optim):
    torch.save({"step": step, "g": g.state_dict(), "d": d.state_dict(),
                "g_optim": g_optim.state_dict(), "d_optim": d_optim.state_dict()}, path)


def train(args, g, d, g_optim, d_optim, start_step):
    g_mod = DDP(g, device_ids=[args.local_rank]) if args.distributed and args.device.type == "cuda" else g
    d_mod = DDP(d, device_ids=[args.local_rank]) if args.distributed and args.device.type == "cuda" else d
    for step in range(start_step, start_step + args.iters):
        real = torch.rand(args.batch, 256, device=args.device) * 2 - 1
        z = torch.randn(args.batch, 64, device=args.device)
        fake = g_mod(z)
        d_loss = F.softplus(d_mod(fake.detach())).mean() + F.softplus(-d_mod(real)).mean()
        d_optim.zero_grad(set_to_none=True)
        d_loss.backward()
        d_optim.step()
        g_loss = F.softplus(-d_mod(g_mod(z))).mean()
        g_optim.zero_grad(set_to_none=True)
        g_loss.backward()
        g_optim.step()
    return start_step + args.iters


def main():
    class Args:
        iters, batch, lr = 4, 16, 2e-4
    args = Args()
    setup(args)
    g, d = Generator().to(args.device), Discriminator().to(args.device)
    g_optim = torch.optim.Adam(g.parameters(), lr=args.lr, betas=(0.0, 0.99))
    d_optim = torch.optim.Adam(d.parameters(), lr=args.lr, betas=(0.0, 0.99))

    run_dir = shared_run_dir(args)
    args.ckpt = os.path.join(run_dir, "000004.pt")
    step = train(args, g, d, g_optim, d_optim, 0)
    is_main = not args.distributed or dist.get_rank() == 0
    if is_main:
        save_checkpoint(args.ckpt, step, g, d, g_optim, d_optim)
    if args.distributed:
        dist.barrier()

    print("load model:", args.ckpt)
    ckpt = torch.load(args.ckpt)  # expect: any
    g.load_state_dict(ckpt["g"])
    d.load_state_dict(ckpt["d"])
    g_optim.load_state_dict(ckpt["g_optim"])
    d_optim.load_state_dict(ckpt["d_optim"])
    args.start_step = ckpt["step"]
    final = train(args, g, d, g_optim, d_optim, args.start_step)
    print("resumed from", args.start_step, "finished at", final)
    if args.distributed:
        dist.barrier()
    if is_main:
        shutil.rmtree(run_dir)
    if args.distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
