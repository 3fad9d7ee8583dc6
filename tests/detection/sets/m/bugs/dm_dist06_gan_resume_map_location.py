# source: https://github.com/Lightning-AI/pytorch-lightning/issues/19219
# area: porting & distributed
# bug: load_from_checkpoint calls torch.load without map_location, so when 4 DDP ranks resume, every rank deserialises the checkpoint onto cuda:0 (the device it was saved from), piling contexts and tensors on GPU 0 until it runs out of memory
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def make_generator(latent_dim, channels):
    return nn.Sequential(
        nn.Linear(latent_dim, channels * 16), nn.Unflatten(1, (channels, 16)),
        nn.ConvTranspose1d(channels, channels // 2, 4, stride=2, padding=1), nn.LeakyReLU(0.2),
        nn.ConvTranspose1d(channels // 2, 1, 4, stride=2, padding=1), nn.Tanh(),
    )


def make_discriminator(channels):
    return nn.Sequential(
        nn.Conv1d(1, channels // 2, 4, stride=2, padding=1), nn.LeakyReLU(0.2),
        nn.Conv1d(channels // 2, channels, 4, stride=2, padding=1), nn.LeakyReLU(0.2),
        nn.Flatten(), nn.Linear(channels * 16, 1),
    )


class GANSystem(nn.Module):
    def __init__(self, latent_dim=32, channels=32, lr=2e-4):
        super().__init__()
        self.hparams = {"latent_dim": latent_dim, "channels": channels, "lr": lr}
        self.generator = make_generator(latent_dim, channels)
        self.discriminator = make_discriminator(channels)

    def setup(self, device, distributed):
        self.to(device)
        if distributed:
            ids = [device.index] if device.type == "cuda" else None
            self.generator = DDP(self.generator, device_ids=ids)
            self.discriminator = DDP(self.discriminator, device_ids=ids)
        lr = self.hparams["lr"]
        return (torch.optim.Adam(self.generator.parameters(), lr=lr, betas=(0.5, 0.999)),
                torch.optim.Adam(self.discriminator.parameters(), lr=lr, betas=(0.5, 0.999)))

    def training_step(self, real, opt_g, opt_d):
        z = torch.randn(real.shape[0], self.hparams["latent_dim"], device=real.device)
        fake = self.generator(z)
        d_loss = F.softplus(-self.discriminator(real)).mean() + F.softplus(self.discriminator(fake.detach())).mean()
        opt_d.zero_grad(set_to_none=True)
        d_loss.backward()
        opt_d.step()
        g_loss = F.softplus(-self.discriminator(fake)).mean()
        opt_g.zero_grad(set_to_none=True)
        g_loss.backward()
        opt_g.step()
        return g_loss.detach(), d_loss.detach()

    def save_checkpoint(self, path, opt_g, opt_d, epoch):
        state = {name: getattr(m, "module", m).state_dict()
                 for name, m in (("generator", self.generator), ("discriminator", self.discriminator))}
        torch.save({"hyper_parameters": self.hparams, "state_dict": state,
                    "opt_g": opt_g.state_dict(), "opt_d": opt_d.state_dict(), "epoch": epoch}, path)

    @classmethod
    def load_from_checkpoint(cls, path):
        ckpt = torch.load(path)  # expect: any
        system = cls(**ckpt["hyper_parameters"])
        system.generator.load_state_dict(ckpt["state_dict"]["generator"])
        system.discriminator.load_state_dict(ckpt["state_dict"]["discriminator"])
        return system, ckpt


def fit(system, opt_g, opt_d, device, epochs, start_epoch=0, steps=6):
    for epoch in range(start_epoch, start_epoch + epochs):
        g_sum = torch.zeros((), device=device)
        for _ in range(steps):
            freqs = torch.rand(16, 1, 1, device=device) * 6 + 1
            real = torch.sin(2 * torch.pi * freqs * torch.linspace(0, 1, 64, device=device))
            g_loss, _ = system.training_step(real, opt_g, opt_d)
            g_sum += g_loss
        print(f"epoch {epoch}: g_loss={(g_sum / steps).item():.3f}")
    return start_epoch + epochs


def main():
    distributed = "RANK" in os.environ and dist.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if distributed:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    torch.manual_seed(0)
    run_dir = os.environ.get("RUN_DIR") or tempfile.mkdtemp(prefix="gan_run_")
    ckpt_path = os.path.join(run_dir, "last.ckpt")
    system = GANSystem()
    opt_g, opt_d = system.setup(device, distributed)
    epoch = fit(system, opt_g, opt_d, device, epochs=1)
    if not distributed or dist.get_rank() == 0:
        system.save_checkpoint(ckpt_path, opt_g, opt_d, epoch)
    if distributed:
        dist.barrier()

    resumed, ckpt = GANSystem.load_from_checkpoint(ckpt_path)
    opt_g, opt_d = resumed.setup(device, distributed)
    opt_g.load_state_dict(ckpt["opt_g"])
    opt_d.load_state_dict(ckpt["opt_d"])
    fit(resumed, opt_g, opt_d, device, epochs=1, start_epoch=ckpt["epoch"])
    if "RUN_DIR" not in os.environ:
        shutil.rmtree(run_dir, ignore_errors=True)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
