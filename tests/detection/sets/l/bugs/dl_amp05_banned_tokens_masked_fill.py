# source: https://github.com/facebookresearch/advprompter/issues/12
# area: AMP
# bug: under CUDA autocast the logits are float16, and masking disallowed tokens with -1e10 raises "value cannot be converted to type at::Half without overflow"
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class PrompterLM(nn.Module):
    def __init__(self, vocab_size=300, dim=64, n_layers=2, max_len=64):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.pos = nn.Embedding(max_len, dim)
        layer = nn.TransformerEncoderLayer(dim, 4, 4 * dim, dropout=0.0, batch_first=True)
        self.body = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.lm_head = nn.Linear(dim, vocab_size)

    def forward(self, input_ids):
        t = input_ids.size(1)
        pos = torch.arange(t, device=input_ids.device)
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=input_ids.device)
        h = self.body(self.embed(input_ids) + self.pos(pos), mask=mask, is_causal=True)
        return self.lm_head(h)


class SuffixSampler:
    """Samples adversarial suffixes token by token, never emitting disallowed ids."""

    def __init__(self, model, disallowed_ids, use_amp=True, temperature=0.8, top_k=20):
        self.model = model
        self.use_amp = use_amp and device.type == "cuda"
        self.temperature = temperature
        self.top_k = top_k
        vocab = model.lm_head.out_features
        self.ban_mask = torch.zeros(vocab, dtype=torch.bool, device=device)
        self.ban_mask[torch.as_tensor(disallowed_ids, device=device)] = True

    def model_forward(self, input_ids):
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=self.use_amp):
            pred_logits = self.model(input_ids)
            pred_logits = pred_logits.masked_fill(self.ban_mask, -1e10)  # expect: any
        return pred_logits

    @torch.no_grad()
    def generate(self, prompt_ids, max_new_tokens=16):
        ids = prompt_ids
        for _ in range(max_new_tokens):
            logits = self.model_forward(ids)[:, -1, :].float() / self.temperature
            topv, topi = logits.topk(self.top_k, dim=-1)
            probs = F.softmax(topv, dim=-1)
            choice = torch.multinomial(probs, 1)
            ids = torch.cat([ids, topi.gather(-1, choice)], dim=1)
        return ids[:, prompt_ids.size(1):]


def disallowed_token_ids(vocab_size=300):
    special = [0, 1, 2]
    non_ascii = list(range(250, vocab_size))
    return special + non_ascii


if __name__ == "__main__":
    torch.manual_seed(0)
    lm = PrompterLM().to(device).eval()
    sampler = SuffixSampler(lm, disallowed_token_ids())
    prompts = torch.randint(3, 250, (4, 10), device=device)
    suffix = sampler.generate(prompts)
    assert not sampler.ban_mask[suffix].any()
    print("suffix shape:", tuple(suffix.shape))
