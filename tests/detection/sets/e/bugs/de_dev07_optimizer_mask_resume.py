# source: https://github.com/wochenlong/lora-scripts-next/pull/320
# area: device placement
# bug: on resume the custom optimizer rebuilds its per-parameter lr masks from a checkpoint mapped to the CPU and never moves them to the parameters' device
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class AutoMaskSGD(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-2, grow=1.05, shrink=0.7):
        super().__init__(params, dict(lr=lr, grow=grow, shrink=shrink))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if "lr_mask" not in st:
                    st["lr_mask"] = torch.full_like(p, group["lr"])
                    st["last_sign"] = torch.zeros_like(p)
                sign = p.grad.sign()
                agree = sign == st["last_sign"]
                factor = torch.where(agree, group["grow"], group["shrink"])
                st["lr_mask"].mul_(factor).clamp_(1e-5, 1e-1)
                p.sub_(st["lr_mask"] * sign)
                st["last_sign"].copy_(sign)

    def state_dict(self):
        sd = super().state_dict()
        sd["state"] = {i: {k: v for k, v in s.items() if k != "lr_mask"}
                       for i, s in sd["state"].items()}
        params = [p for g in self.param_groups for p in g["params"]]
        masks = [self.state[p].get("lr_mask") for p in params]
        sd["lr_masks"] = [None if m is None else m.half() for m in masks]
        return sd

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        masks = state_dict.pop("lr_masks")
        super().load_state_dict(state_dict)
        params = [p for g in self.param_groups for p in g["params"]]
        for p, mask in zip(params, masks):
            if mask is not None and mask.shape == p.shape:
                self.state[p]["lr_mask"] = mask.float()  # expect: any


def build_model():
    return nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))


def run_steps(model, opt, data, steps):
    x, y = data
    for _ in range(steps):
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


def main():
    torch.manual_seed(0)
    x = torch.randn(256, 8, device=device)
    y = x[:, :1] * 2 - x[:, 1:2]
    ckpt_dir = tempfile.mkdtemp()
    path = os.path.join(ckpt_dir, "last.pt")

    model = build_model().to(device)
    opt = AutoMaskSGD(model.parameters())
    print("phase 1", run_steps(model, opt, (x, y), 20))
    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, path)

    ckpt = torch.load(path, map_location="cpu")
    model = build_model()
    model.load_state_dict(ckpt["model"])
    model.to(device)
    opt = AutoMaskSGD(model.parameters())
    opt.load_state_dict(ckpt["opt"])
    print("phase 2", run_steps(model, opt, (x, y), 20))


if __name__ == "__main__":
    main()
