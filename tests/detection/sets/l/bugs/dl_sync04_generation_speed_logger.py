# source: https://github.com/mmcdermott/MEDS_EIC_AR/issues/132
# area: transfer & sync
# bug: the speed callback reads perf_counter() right after the batch without torch.cuda.synchronize(), so on a GPU it times kernel launches, not generation
import statistics
import time

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Callback:
    def on_predict_batch_start(self, runner, batch_idx):
        pass

    def on_predict_batch_end(self, runner, outputs, batch_idx):
        pass

    def on_predict_end(self, runner):
        pass


class GenerationSpeedLogger(Callback):
    def __init__(self):
        self.batch_times = []
        self.tokens = []
        self._t0 = None

    def on_predict_batch_start(self, runner, batch_idx):
        self._t0 = time.perf_counter()  # expect[t]: any

    def on_predict_batch_end(self, runner, outputs, batch_idx):
        elapsed = time.perf_counter() - self._t0  # expect[t]: any
        self.batch_times.append(elapsed)
        self.tokens.append(outputs.numel())

    def on_predict_end(self, runner):
        mean_t = statistics.mean(self.batch_times)
        runner.metrics["predict/batch_time_sec_mean"] = mean_t
        runner.metrics["predict/tokens_per_sec"] = sum(self.tokens) / sum(self.batch_times)


class TinyEventLM(nn.Module):
    def __init__(self, vocab=128, dim=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, vocab)

    @torch.no_grad()
    def generate(self, prompt, max_new_tokens=16):
        h = None
        x = prompt
        generated = []
        for _ in range(max_new_tokens):
            y, h = self.rnn(self.emb(x), h)
            nxt = self.out(y[:, -1]).argmax(-1, keepdim=True)
            generated.append(nxt)
            x = nxt
        return torch.cat(generated, dim=1)


class PredictRunner:
    def __init__(self, model, callbacks):
        self.model = model.to(device).eval()
        self.callbacks = callbacks
        self.metrics = {}

    def predict(self, loader):
        outputs = []
        for i, prompt in enumerate(loader):
            prompt = prompt.to(device)
            for cb in self.callbacks:
                cb.on_predict_batch_start(self, i)
            out = self.model.generate(prompt)
            for cb in self.callbacks:
                cb.on_predict_batch_end(self, out, i)
            outputs.append(out)
        for cb in self.callbacks:
            cb.on_predict_end(self)
        return torch.cat(outputs)


def main():
    prompts = torch.randint(0, 128, (96, 20))
    loader = torch.utils.data.DataLoader(prompts, batch_size=16)
    runner = PredictRunner(TinyEventLM(), [GenerationSpeedLogger()])
    preds = runner.predict(loader)
    print(preds.shape, {k: round(v, 5) for k, v in runner.metrics.items()})


if __name__ == "__main__":
    main()
