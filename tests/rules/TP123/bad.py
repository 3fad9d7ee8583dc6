import torch


def to_env_actions(actions):
    if isinstance(actions, torch.LongTensor):
        actions = actions.squeeze(1)
    return actions.cpu().numpy()


def is_half(x):
    return x.type() == "torch.HalfTensor"
