import torch


def to_env_actions(actions):
    if actions.dtype == torch.int64:
        actions = actions.squeeze(1)
    return actions.cpu().numpy()


def is_half(x):
    return x.dtype == torch.float16


def either(x):
    return isinstance(x, (torch.LongTensor, torch.cuda.LongTensor))
