#!/usr/bin/env python3
"""io_python_interop: safetensors files between Tessera and PyTorch.

(a) io_interop_driver writes a file of every Tessera dtype; it must load with
    safetensors.torch.load_file with the same names, dtypes, shapes, values
    and metadata.
(b) safetensors.torch.save_file writes a file of torch tensors; the driver
    must load it and find the values (it checks them against the formulas of
    torch_tensors()).

Needs torch and the safetensors package. When this interpreter lacks
safetensors, the venv made by scripts/pyinterop.sh is used if it exists;
otherwise the test exits 77, which ctest reports as skipped.

Usage: io_interop.py DRIVER
"""
import os
import subprocess
import sys
import tempfile

VENV_PYTHON = os.path.join(os.path.expanduser("~"), ".cache", "tessera", "pyinterop-venv", "bin",
                           "python")
SKIP = 77


def reexec_or_skip(reason):
    if os.path.exists(VENV_PYTHON) and os.path.realpath(sys.executable) != os.path.realpath(
            VENV_PYTHON) and not os.environ.get("TSR_PYINTEROP_REEXEC"):
        os.environ["TSR_PYINTEROP_REEXEC"] = "1"
        os.execv(VENV_PYTHON, [VENV_PYTHON] + sys.argv)
    print("SKIPPED: %s; run scripts/pyinterop.sh to create %s" % (reason, VENV_PYTHON))
    sys.exit(SKIP)


try:
    import torch
except ImportError:
    reexec_or_skip("no torch in %s" % sys.executable)
try:
    import safetensors.torch
except ImportError:
    reexec_or_skip("no safetensors package in %s" % sys.executable)


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def check_tessera_file(path):
    tensors = safetensors.torch.load_file(path)
    from safetensors import safe_open
    with safe_open(path, framework="pt") as f:
        metadata = f.metadata()
    expect(metadata == {"format": "pt", "epoch": "7"}, "metadata %r" % (metadata,))
    i = lambda n: torch.arange(n, dtype=torch.float64)
    want = {
        "f32": (torch.float32, [2, 3], (i(6) % 7) - 3 + 0.5),
        "f64": (torch.float64, [4], i(4) * 0.25),
        "bf16": (torch.bfloat16, [3], (i(3) - 1) * 1.5),
        "f16": (torch.float16, [2, 2], i(4) - 2),
        "i32": (torch.int32, [3], i(3) * 1000 - 7),
        "i64": (torch.int64, [2, 2], i(4) * 2.0**40),
        "bool": (torch.bool, [5], i(5) % 2),
        "scalar": (torch.float64, [], torch.tensor(3.25, dtype=torch.float64)),
        "transposed": (torch.float32, [3, 2],
                       ((i(6) % 7) - 3 + 0.5).reshape(2, 3).t().contiguous()),
    }
    expect(sorted(tensors) == sorted(want), "names %r" % sorted(tensors))
    for name, (dtype, shape, values) in want.items():
        t = tensors[name]
        expect(t.dtype == dtype, "%s: dtype %s, want %s" % (name, t.dtype, dtype))
        expect(list(t.shape) == shape, "%s: shape %s, want %s" % (name, list(t.shape), shape))
        got = t.to(torch.float64).reshape(-1)
        expect(torch.equal(got, values.reshape(-1).to(torch.float64)),
               "%s: values %s, want %s" % (name, got.tolist(), values.reshape(-1).tolist()))


def torch_tensors():
    i = lambda n: torch.arange(n, dtype=torch.float64)
    return {
        "f32": (i(6) * 0.5).to(torch.float32).reshape(2, 3),
        "f64": i(4) * -0.25,
        "i64": (torch.arange(5, dtype=torch.int64) * 2**40 - 3).reshape(5, 1),
        "bool": (torch.arange(7) % 3) == 0,
        "bf16": (i(4) * 2.5 - 4).to(torch.bfloat16),
        "f16": (i(4) * 0.125).to(torch.float16).reshape(2, 1, 2),
        "i32": torch.tensor(0, dtype=torch.int32),
    }


def run(driver, *args):
    result = subprocess.run([driver] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            universal_newlines=True)
    sys.stdout.write(result.stdout)
    expect(result.returncode == 0, "%s %s exited %d" % (driver, " ".join(args), result.returncode))


def main():
    if len(sys.argv) != 2:
        print("usage: io_interop.py DRIVER", file=sys.stderr)
        return 2
    driver = sys.argv[1]
    print("python %s, torch %s, safetensors %s" %
          (sys.version.split()[0], torch.__version__, getattr(safetensors, "__version__", "?")))
    with tempfile.TemporaryDirectory() as folder:
        tessera_file = os.path.join(folder, "from_tessera.safetensors")
        run(driver, "write", tessera_file)
        check_tessera_file(tessera_file)
        print("(a) Tessera -> safetensors.torch.load_file: ok")
        torch_file = os.path.join(folder, "from_torch.safetensors")
        safetensors.torch.save_file(torch_tensors(), torch_file, metadata={"source": "torch"})
        run(driver, "read", torch_file)
        print("(b) safetensors.torch.save_file -> Tessera: ok")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
