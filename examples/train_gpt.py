"""A small decoder-only transformer language model (causal attention from matmul and
softmax) on characters: a synthetic text by default, a text file with --data.

    python3 examples/train_gpt.py --device loom|cpu --steps N --seed S [--data FILE]
"""
import math

import torch
import torch.nn.functional as F

import common


class Block(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
        self.qkv, self.proj = torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(), torch.nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class GPT(torch.nn.Module):
    def __init__(self, vocab, context, dim, heads, layers):
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(vocab, dim), torch.nn.Embedding(context, dim)
        self.blocks = torch.nn.Sequential(*[Block(dim, heads) for _ in range(layers)])
        self.ln, self.head = torch.nn.LayerNorm(dim), torch.nn.Linear(dim, vocab)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        return self.head(self.ln(self.blocks(self.tok(idx) + self.pos(pos))))


def synthetic_text(n, seed):
    g = torch.Generator().manual_seed(seed)
    words = ["loom", "weaves", "lazy", "threads", "into", "fused", "kernels", "and", "views", "alias"]
    return " ".join(words[i] for i in torch.randint(0, len(words), (n,), generator=g).tolist())


def main():
    def extra(p):
        p.add_argument("--context", type=int, default=64)
        p.add_argument("--dim", type=int, default=128)
        p.add_argument("--layers", type=int, default=2)
        p.add_argument("--heads", type=int, default=4)

    args = common.parse_args(__doc__.splitlines()[0], steps=30, batch=16, extra=extra)
    torch.manual_seed(args.seed)
    dev = common.device_of(args.device)
    text = open(args.data).read() if args.data else synthetic_text(20000, args.seed)
    chars = sorted(set(text))
    data = torch.tensor([chars.index(c) for c in text])
    model = GPT(len(chars), args.context, args.dim, args.heads, args.layers).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1, foreach=True)
    g = torch.Generator().manual_seed(args.seed)
    bar = common.Progress(args.steps, "tokens")
    for step in range(args.steps):
        start = torch.randint(0, len(data) - args.context - 1, (args.batch,), generator=g)
        xb = torch.stack([data[s:s + args.context] for s in start.tolist()]).to(dev)
        yb = torch.stack([data[s + 1:s + 1 + args.context] for s in start.tolist()]).to(dev)
        opt.zero_grad()
        logits = model(xb)
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), yb.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        bar.update(step, loss.item(), args.batch * args.context)
    bar.finish(dev, args.plot, "character GPT")


if __name__ == "__main__":
    main()
