# twin of: bugs/di_dist01_face_learner_pretrained_load.py
# area: porting & distributed
# correct: the pretrained tensors are mapped onto this process's own device (conf.device) while loading, so no rank allocates on cuda:0 unless it owns it
import math
import os
import shutil
import socket
import tempfile
from types import SimpleNamespace

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class MobileFaceNetLite(nn.Module):
    def __init__(self, embedding_size=64):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.PReLU(32),
            nn.Conv2d(32, 64, 3, 2, 1, groups=32, bias=False), nn.BatchNorm2d(64), nn.PReLU(64),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.embed = nn.Linear(64, embedding_size)

    def forward(self, x):
        return F.normalize(self.embed(self.features(x)), dim=1)


class Arcface(nn.Module):
    def __init__(self, embedding_size=64, classnum=100, s=64.0, m=0.5):
        super().__init__()
        self.kernel = nn.Parameter(torch.randn(embedding_size, classnum) * 0.01)
        self.s, self.cos_m, self.sin_m = s, math.cos(m), math.sin(m)

    def forward(self, emb, label):
        cos = (emb @ F.normalize(self.kernel, dim=0)).clamp(-1 + 1e-7, 1 - 1e-7)
        sin = torch.sqrt(1.0 - cos * cos)
        target = cos * self.cos_m - sin * self.sin_m
        onehot = F.one_hot(label, cos.shape[1]).to(cos.dtype)
        return self.s * (onehot * target + (1 - onehot) * cos)


class FaceLearner:
    def __init__(self, conf):
        self.conf = conf
        self.model = MobileFaceNetLite(conf.embedding_size).to(conf.device)
        self.head = Arcface(conf.embedding_size, conf.classnum).to(conf.device)
        self.optimizer = torch.optim.SGD(
            list(self.model.parameters()) + list(self.head.parameters()), lr=conf.lr, momentum=0.9)

    def save_state(self, save_path, extra):
        torch.save(self.model.state_dict(), os.path.join(save_path, f"model_{extra}.pth"))
        torch.save(self.head.state_dict(), os.path.join(save_path, f"head_{extra}.pth"))

    def load_state(self, save_path, fixed_str):
        loc = self.conf.device
        self.model.load_state_dict(torch.load(os.path.join(save_path, f"model_{fixed_str}"), map_location=loc))
        self.head.load_state_dict(torch.load(os.path.join(save_path, f"head_{fixed_str}"), map_location=loc))

    def wrap_ddp(self):
        ids = [self.conf.local_rank] if self.conf.device.type == "cuda" else None
        self.model = DDP(self.model, device_ids=ids)
        self.head = DDP(self.head, device_ids=ids)

    def train(self, images, labels, steps):
        for step in range(steps):
            idx = torch.randint(0, len(images), (32,))
            x, y = images[idx].to(self.conf.device), labels[idx].to(self.conf.device)
            loss = F.cross_entropy(self.head(self.model(x), y), y)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
        return loss.detach()


def make_conf():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1")
    local_rank = int(os.environ["LOCAL_RANK"])
    cuda = torch.cuda.is_available()
    dist.init_process_group(backend="nccl" if cuda else "gloo")
    if cuda:
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    return SimpleNamespace(local_rank=local_rank, device=device, embedding_size=64, classnum=100, lr=0.05)


def main():
    conf = make_conf()
    torch.manual_seed(0)
    images, labels = torch.randn(512, 3, 32, 32), torch.randint(0, conf.classnum, (512,))
    shared = [tempfile.mkdtemp() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(shared, src=0)
    if dist.get_rank() == 0:
        pretrain = FaceLearner(conf)
        pretrain.train(images, labels, steps=5)
        pretrain.save_state(shared[0], "acc0.9960_step160000")
    dist.barrier()
    learner = FaceLearner(conf)
    learner.load_state(shared[0], "acc0.9960_step160000.pth")
    learner.wrap_ddp()
    loss = learner.train(images, labels, steps=5)
    dist.barrier()
    if dist.get_rank() == 0:
        shutil.rmtree(shared[0])
        print(f"fine-tune loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
