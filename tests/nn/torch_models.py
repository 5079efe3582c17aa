"""PyTorch twins of vkspmd::nn's models, with the same parameter names, so a state_dict loads
from the .npy files Module::save_npy writes (load_npy_dir). For peer checks against PyTorch."""
import math
import os

import numpy as np
import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, in_features, hidden_features, out_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.fc2 = nn.Linear(hidden_features, out_features)

    def forward(self, x):
        return self.fc2(nn.functional.gelu(self.fc1(x)))


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x):
        batch, length, d_model = x.shape
        head_dim = d_model // self.heads

        def split(y):
            return y.view(batch, length, self.heads, head_dim).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
        allowed = torch.ones(length, length, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~allowed, float("-inf"))
        merged = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, length, d_model)
        return self.output(merged)


class TransformerBlock(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attention = CausalSelfAttention(d_model, heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = MLP(d_model, 4 * d_model, d_model)

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TransformerLM(nn.Module):
    def __init__(self, vocab, d_model, heads, layers, max_seq):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, d_model)
        self.position_embedding = nn.Embedding(max_seq, d_model)
        self.blocks = nn.ModuleList(TransformerBlock(d_model, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, tokens):
        h = self.token_embedding(tokens) + self.position_embedding.weight[: tokens.shape[1]]
        for block in self.blocks:
            h = block(h)
        return self.head(self.ln_f(h))

    def loss(self, tokens, targets):
        logits = self.forward(tokens)
        return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                           targets.reshape(-1).long())


class MlpRegressor(nn.Module):
    def __init__(self, in_features, hidden_features, out_features):
        super().__init__()
        self.mlp = MLP(in_features, hidden_features, out_features)

    def forward(self, x):
        return self.mlp(x)

    def loss(self, x, y):
        return nn.functional.mse_loss(self.forward(x), y)


def load_npy_dir(model, directory):
    """Loads every parameter from directory/<dotted name>.npy (strict: every name must exist)."""
    state = {name: torch.from_numpy(np.load(os.path.join(directory, name + ".npy")))
             for name in model.state_dict()}
    model.load_state_dict(state, strict=True)
    return model
