"""Shared parts of the training examples: arguments, device, progress bar, summary, plot."""
import argparse
import sys
import time

import torch

import loom


def parse_args(description, steps, batch, extra=None):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--device", choices=["loom", "cpu"], default="loom")
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument("--batch", type=int, default=batch)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", help="path to the real dataset (synthetic data when omitted)")
    p.add_argument("--plot", help="write the loss curve to this PNG (needs python3-matplotlib)")
    if extra:
        extra(p)
    return p.parse_args()


def device_of(name):
    return loom.device if name == "loom" else torch.device("cpu")


class Progress:
    """A one-line progress bar with loss and throughput, on stderr."""

    def __init__(self, steps, unit):
        self.steps, self.unit, self.t0 = steps, unit, time.perf_counter()
        self.losses = []

    def update(self, step, loss, items):
        self.losses.append(loss)
        elapsed = time.perf_counter() - self.t0
        done = int(30 * (step + 1) / self.steps)
        rate = items * (step + 1) / max(elapsed, 1e-9)
        sys.stderr.write(f"\r[{'#' * done}{'.' * (30 - done)}] {step + 1}/{self.steps} "
                         f"loss {loss:.4f} {rate:,.0f} {self.unit}/s")
        sys.stderr.flush()

    def finish(self, device, plot=None, label=""):
        sys.stderr.write("\n")
        if device == loom.device:
            fb = loom.metrics()["fallbacks"]
            print("fallbacks: " + (", ".join(f"{k} x{v}" for k, v in sorted(fb.items())) if fb else "none"))
        print(f"time {time.perf_counter() - self.t0:.2f} s")
        print(f"final loss {self.losses[-1]:.6f}")
        if plot:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt

            plt.plot(self.losses)
            plt.xlabel("step")
            plt.ylabel("loss")
            plt.title(label)
            plt.savefig(plot)
            print(f"loss curve: {plot}")
