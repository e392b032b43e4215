"""An hlb-CIFAR10-style network (conv-batchnorm-relu-pool blocks, label smoothing, SGD with
nesterov) on CIFAR-10: synthetic images by default, the binary batches with --data.

    python3 examples/train_cifar.py --device loom|cpu --steps N --seed S [--data DIR]
"""
import os

import torch
import torch.nn.functional as F

import common


def load_cifar(path):
    xs, ys = [], []
    for i in range(1, 6):
        with open(os.path.join(path, f"data_batch_{i}.bin"), "rb") as f:
            raw = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).view(-1, 3073)
        ys.append(raw[:, 0].long())
        xs.append(raw[:, 1:].view(-1, 3, 32, 32).float() / 255)
    x = torch.cat(xs)
    mean, std = x.mean((0, 2, 3), keepdim=True), x.std((0, 2, 3), keepdim=True)
    return (x - mean) / std, torch.cat(ys)


def synthetic(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 10, (n,), generator=g)
    patterns = torch.randn(10, 3, 32, 32, generator=g)
    return patterns[y] + torch.randn(n, 3, 32, 32, generator=g), y


def block(cin, cout):
    return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                               torch.nn.BatchNorm2d(cout), torch.nn.ReLU(), torch.nn.MaxPool2d(2))


def network(width):
    return torch.nn.Sequential(block(3, width), block(width, 2 * width), block(2 * width, 4 * width),
                               torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                               torch.nn.Linear(4 * width, 10))


def main():
    args = common.parse_args(__doc__.splitlines()[0], steps=20, batch=64,
                             extra=lambda p: p.add_argument("--width", type=int, default=32))
    torch.manual_seed(args.seed)
    dev = common.device_of(args.device)
    x, y = load_cifar(args.data) if args.data else synthetic(2048, args.seed)
    model = network(args.width).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4,
                          foreach=True)
    g = torch.Generator().manual_seed(args.seed)
    bar = common.Progress(args.steps, "images")
    for step in range(args.steps):
        idx = torch.randint(0, len(x), (args.batch,), generator=g)
        xb, yb = x[idx].to(dev), y[idx].to(dev)
        if step % 2:
            xb = xb.flip(3)  # the usual random-flip augmentation, deterministically
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb, label_smoothing=0.2)
        loss.backward()
        opt.step()
        bar.update(step, loss.item(), args.batch)
    bar.finish(dev, args.plot, "CIFAR-10 CNN")


if __name__ == "__main__":
    main()
