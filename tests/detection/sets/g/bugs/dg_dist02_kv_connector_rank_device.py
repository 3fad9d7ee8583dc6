# source: https://github.com/LMCache/LMCache/issues/1988
# area: porting & distributed
# bug: the connector picks cuda:{tp_rank}; on the second node the tensor-parallel rank is not a local GPU index (invalid device ordinal / wrong GPU)
import os

import torch
import torch.distributed as dist


class ConnectorConfig:
    def __init__(self, num_layers=4, num_heads=4, head_dim=16, num_slots=256):
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.num_slots = num_slots


class KVOffloadConnector:
    """Offloads prefix KV blocks of a serving engine to host memory and reloads them."""

    def __init__(self, cfg, tp_size, rank, k_pool, v_pool):
        self.kv_dtype = k_pool[0].dtype
        self.tp_size = tp_size
        self.rank = rank
        if torch.cuda.is_available():
            self.device = torch.device("cuda", rank)  # expect[dev]: any
        else:
            self.device = torch.device("cpu")
        self.k_pool = k_pool
        self.v_pool = v_pool
        self.cfg = cfg
        self.store = {}

    @staticmethod
    def _key(token_ids):
        return tuple(token_ids)

    def save_kv(self, token_ids, slot_ids):
        keys = torch.stack([k[slot_ids] for k in self.k_pool]).to("cpu")
        values = torch.stack([v[slot_ids] for v in self.v_pool]).to("cpu")
        self.store[self._key(token_ids)] = (keys, values)

    def lookup(self, token_ids):
        for end in range(len(token_ids), 0, -1):
            if self._key(token_ids[:end]) in self.store:
                return end
        return 0

    def global_min_tokens(self, local_tokens):
        t = torch.tensor([local_tokens], dtype=torch.int32, device=self.device)  # expect[dev]: any
        if dist.is_initialized() and self.tp_size > 1:
            dist.all_reduce(t, op=dist.ReduceOp.MIN)
        return int(t.item())

    def start_load_kv(self, token_ids, slot_ids):
        hit = self.global_min_tokens(self.lookup(token_ids))
        if hit == 0:
            return 0
        keys, values = self.store[self._key(token_ids[:hit])]
        dst = slot_ids[:hit]
        for layer in range(self.cfg.num_layers):
            self.k_pool[layer][dst] = keys[layer].to(self.k_pool[layer].device)
            self.v_pool[layer][dst] = values[layer].to(self.v_pool[layer].device)
        return hit


def allocate_pools(cfg, device, dtype):
    shape = (cfg.num_slots, cfg.num_heads, cfg.head_dim)
    k_pool = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(cfg.num_layers)]
    v_pool = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(cfg.num_layers)]
    return k_pool, v_pool


def main():
    tp_rank = int(os.environ.get("RANK", 0))
    tp_size = int(os.environ.get("WORLD_SIZE", 1))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device, dtype = torch.device("cuda", local_rank), torch.float16
    else:
        device, dtype = torch.device("cpu"), torch.float32
    if "RANK" in os.environ and dist.is_available():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")

    cfg = ConnectorConfig()
    k_pool, v_pool = allocate_pools(cfg, device, dtype)
    for layer in range(cfg.num_layers):
        k_pool[layer].normal_()
        v_pool[layer].normal_()
    connector = KVOffloadConnector(cfg, tp_size, tp_rank, k_pool, v_pool)

    prompt = list(range(100, 140))
    slots = torch.arange(0, len(prompt), device=device)
    connector.save_kv(prompt, slots)
    new_slots = torch.arange(64, 64 + len(prompt) + 8, device=device)
    for request in (prompt + [7, 8, 9], [1, 2, 3], prompt[:20]):
        hit = connector.start_load_kv(request, new_slots)
        if tp_rank == 0:
            print(f"request of {len(request)} tokens reused {hit} cached tokens")
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
