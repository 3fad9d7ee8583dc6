import contextlib

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, loader, optimizer, local_rank, log_every=100):
    model = DDP(model.to(local_rank), device_ids=[local_rank])
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x.to(local_rank)), y.to(local_rank))
        loss.backward()
        optimizer.step()  # a step at every batch: nothing to accumulate
        optimizer.zero_grad()
        if step % log_every == 0:
            print(step)


def train_critic(generator, critic, batches, g_opt, c_opt, local_rank, n_critic=5):
    critic = DDP(critic.to(local_rank), device_ids=[local_rank])
    for step in range(1000):
        for _ in range(n_critic):  # the inner loop steps its own optimizer each time
            real = next(batches)
            critic(generator(real).detach()).mean().backward()
            c_opt.step()
            c_opt.zero_grad()
        (-critic(generator(next(batches))).mean()).backward()
        g_opt.step()
        g_opt.zero_grad()
