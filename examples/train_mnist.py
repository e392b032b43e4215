"""An MLP (784-1024-1024-10) on MNIST: synthetic digits by default, the idx files with --data.

    python3 examples/train_mnist.py --device loom|cpu --steps N --seed S [--data DIR]
"""
import gzip
import os

import torch
import torch.nn.functional as F

import common


def load_mnist(path):
    def read(name, offset):
        for candidate in (name, name + ".gz"):
            full = os.path.join(path, candidate)
            if os.path.exists(full):
                opener = gzip.open if candidate.endswith(".gz") else open
                with opener(full, "rb") as f:
                    return torch.frombuffer(bytearray(f.read()[offset:]), dtype=torch.uint8)
        raise FileNotFoundError(os.path.join(path, name))

    x = read("train-images-idx3-ubyte", 16).view(-1, 784).float() / 255
    y = read("train-labels-idx1-ubyte", 8).long()
    return x, y


def synthetic(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 10, (n,), generator=g)
    centers = torch.randn(10, 784, generator=g)
    return centers[y] + 0.5 * torch.randn(n, 784, generator=g), y


def main():
    args = common.parse_args(__doc__.splitlines()[0], steps=50, batch=256)
    torch.manual_seed(args.seed)
    dev = common.device_of(args.device)
    x, y = load_mnist(args.data) if args.data else synthetic(8192, args.seed)
    model = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                torch.nn.ReLU(), torch.nn.Linear(1024, 10)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
    g = torch.Generator().manual_seed(args.seed)
    bar = common.Progress(args.steps, "samples")
    for step in range(args.steps):
        idx = torch.randint(0, len(x), (args.batch,), generator=g)
        xb, yb = x[idx].to(dev), y[idx].to(dev)
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        bar.update(step, loss.item(), args.batch)
    bar.finish(dev, args.plot, "MNIST MLP")


if __name__ == "__main__":
    main()
