import torch
import torch.distributed as dist


def main(model):
    dist.init_process_group("gloo")
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), "ckpt.pt")


def save_on_master(obj, path):
    torch.save(obj, path)
