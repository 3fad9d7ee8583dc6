# source: https://github.com/ndrplz/ConvLSTM_pytorch/pull/10
# area: device placement
# bug: init_hidden builds the zero hidden/cell states with torch.zeros and no device, so on a GPU they are CPU tensors concatenated with CUDA frames
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ConvLSTMCell(nn.Module):
    def __init__(self, input_dim, hidden_dim, kernel_size=3):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.conv = nn.Conv2d(input_dim + hidden_dim, 4 * hidden_dim,
                              kernel_size, padding=kernel_size // 2)

    def forward(self, x, state):
        h_cur, c_cur = state
        gates = self.conv(torch.cat([x, h_cur], dim=1))
        i, f, o, g = torch.split(gates, self.hidden_dim, dim=1)
        c_next = torch.sigmoid(f) * c_cur + torch.sigmoid(i) * torch.tanh(g)
        h_next = torch.sigmoid(o) * torch.tanh(c_next)
        return h_next, c_next

    def init_hidden(self, batch_size, image_size):
        height, width = image_size
        return (torch.zeros(batch_size, self.hidden_dim, height, width),  # expect: any
                torch.zeros(batch_size, self.hidden_dim, height, width))


class ConvLSTM(nn.Module):
    def __init__(self, input_dim, hidden_dims):
        super().__init__()
        dims = [input_dim] + list(hidden_dims)
        self.cells = nn.ModuleList(
            ConvLSTMCell(dims[i], dims[i + 1]) for i in range(len(hidden_dims)))

    def forward(self, frames):
        b, t, _, h, w = frames.shape
        layer_input = frames
        last_states = []
        for cell in self.cells:
            state = cell.init_hidden(b, (h, w))
            outputs = []
            for step in range(t):
                state = cell(layer_input[:, step], state)
                outputs.append(state[0])
            layer_input = torch.stack(outputs, dim=1)
            last_states.append(state)
        return layer_input, last_states


class NextFramePredictor(nn.Module):
    def __init__(self, channels=1, hidden_dims=(16, 16)):
        super().__init__()
        self.encoder = ConvLSTM(channels, hidden_dims)
        self.head = nn.Conv2d(hidden_dims[-1], channels, kernel_size=1)

    def forward(self, frames):
        seq, _ = self.encoder(frames)
        return torch.sigmoid(self.head(seq[:, -1]))


def moving_square_batch(batch_size, seq_len=6, size=16):
    video = torch.zeros(batch_size, seq_len + 1, 1, size, size)
    starts = torch.randint(0, size - 8, (batch_size,))
    for b in range(batch_size):
        for t in range(seq_len + 1):
            x = int(starts[b]) + t
            video[b, t, 0, 4:8, x:x + 4] = 1.0
    return video[:, :-1], video[:, -1]


def train(epochs=2, steps_per_epoch=3):
    model = NextFramePredictor().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        total = torch.zeros((), device=device)
        for _ in range(steps_per_epoch):
            frames, target = moving_square_batch(8)
            frames, target = frames.to(device), target.to(device)
            pred = model(frames)
            loss = F.binary_cross_entropy(pred, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
        print(f"epoch {epoch}: loss {(total / steps_per_epoch).item():.4f}")


if __name__ == "__main__":
    train()
