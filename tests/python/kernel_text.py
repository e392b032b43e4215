"""The C source of the kernels a program compiles, for tests that check how Loom renders."""
import os
import subprocess
import sys


def kernel_sources(prog, cache_dir, **env):
    """Runs `prog` in a new process with LOOM_DEBUG=4 and a kernel cache of its own (so that
    every kernel is compiled and printed); returns each kernel's source text, in order."""
    env = dict(os.environ, LOOM_DEBUG="4", LOOM_CACHE_DIR=str(cache_dir), **env)
    out = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    return out.stderr.split("void kernel")[1:]
