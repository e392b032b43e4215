"""Lists the ops Loom registers whose C++ signature differs in a later PyTorch release.

A kernel's C++ signature must equal its release's generated one (at::_ops::<op>::schema):
the dispatcher compares them when a caller asks for the op's typed handle, so a kernel written
for 1.13's schema fails on a release that changed the argument types, their count or which
of them is written. This script runs on Debian's torch 1.13 with Loom imported, lists every
aten op with a Loom kernel, and compares its schema with the schema strings of another
release's generated headers (ATen/ops/*_ops.h, from tests/torch2/check_headers.sh's scratch
folder). SymInt counts as int (the dispatcher converts for a kernel that takes no SymInt);
names and defaults do not count.

    PYTHONPATH=python /usr/bin/python3 tests/torch2/schema_diff.py INCLUDE_DIR [INCLUDE_DIR ...]

Prints one line per op that differs or is missing, after the release it was read from.
"""
import glob
import os
import re
import sys

import torch

import loom  # noqa: F401  (registers the kernels)

# Ops whose kernels take their release's argument types (csrc/aten/torch_compat.h).
HANDLED = {
    "_foreach_norm.Scalar", "rrelu_with_noise", "rrelu_with_noise.out", "rrelu_with_noise_",
    "std.correction", "std.correction_out", "std_mean.correction", "var.correction",
    "var.correction_out", "var_mean.correction", "embedding_dense_backward",
    "embedding_dense_backward.out",
}

_SCHEMA = re.compile(r'schema_str = "([^"]*)"')
_SYMINT = re.compile(r"\bSymInt\b")


def loom_ops():
    """Name (without aten::) -> FunctionSchema of every aten op with a PrivateUse1 kernel."""
    ops = {}
    for s in torch._C._jit_get_all_schemas():
        if not s.name.startswith("aten::"):
            continue
        name = s.name[6:] + ("." + s.overload_name if s.overload_name else "")
        try:
            if torch._C._dispatch_has_kernel_for_dispatch_key("aten::" + name, "PrivateUse1"):
                ops[name] = s
        except RuntimeError:  # an op of the JIT's with no dispatcher entry
            pass
    return ops


def release_schemas(include):
    """Name -> schema string of every op in a release's generated headers."""
    out = {}
    for path in glob.glob(os.path.join(include, "ATen", "ops", "*_ops.h")):
        with open(path) as f:
            for text in _SCHEMA.findall(f.read()):
                head = text.split("(", 1)[0]
                out[head] = text
    return out


def signature(schema):
    """What the C++ signature depends on: each argument's and result's type and whether it is
    written (a non-const reference), with SymInt read as int."""

    def one(a):
        written = a.alias_info is not None and a.alias_info.is_write
        return (_SYMINT.sub("int", str(a.type)), written)

    return ([one(a) for a in schema.arguments], [one(r) for r in schema.returns])


def symint_positions(text):
    """The arguments that are SymInts (read off the schema's text: a parsed 1.13 schema calls
    them int): a kernel that takes one of them as a SymInt must take all of them as SymInts, so
    a release that makes another one SymInt changes its signature."""
    args = text[text.index("(") + 1:text.rindex(") ->")]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(args):
        depth += ch in "[(" and 1 or ch in "])" and -1 or 0
        if ch == "," and depth == 0:
            parts.append(args[start:i])
            start = i + 1
    parts.append(args[start:])
    return [i for i, a in enumerate(p for p in parts if p.strip() != "*") if _SYMINT.search(a)]


def main(includes):
    ops = loom_ops()
    status = 0
    for include in includes:
        release = release_schemas(include)
        differ, missing = [], []
        for name, schema in sorted(ops.items()):
            text = release.get(name)
            if text is None:
                missing.append(name)
                continue
            try:
                other = torch._C.parse_schema("aten::" + text)
            except RuntimeError as e:  # a type 1.13's parser does not know
                differ.append(f"{name}: unparsed ({str(e).splitlines()[0]}): {text}")
                continue
            ours = symint_positions(str(schema))
            mixed = ours and ours != symint_positions(text)
            if name in HANDLED:
                continue
            if signature(schema) != signature(other) or mixed:
                differ.append(f"{name}:\n    1.13: {schema}\n    new:  aten::{text}")
        print(f"{include}: {len(ops)} ops with a Loom kernel, {len(differ)} differ "
              f"(besides the {len(HANDLED)} that torch_compat.h handles), {len(missing)} missing")
        for line in differ:
            print("  " + line)
        if missing:
            print("  missing: " + " ".join(missing))
        status |= bool(differ)
    return status


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
