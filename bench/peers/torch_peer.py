"""PyTorch peer: the canonical workloads written the way a PyTorch user writes them.

Runs under any Python that has torch (the harness's venv with the newest
PyPI torch, or Debian's /usr/bin/python3 with python3-torch 1.13), so it uses
only APIs present in both. Configuration comes from the environment, set by
the harness per configuration:

    TSR_BENCH_TORCH_THREADS   torch.set_num_threads (default 2)
    TSR_BENCH_TORCH_DEVICE    cpu (default) or cuda / cuda:N: where tensors and
                              models live; on cuda every iteration ends with
                              torch.cuda.synchronize(), and a missing GPU is an
                              error on every request, never a fall-back to cpu
    OMP_NUM_THREADS, MKL_NUM_THREADS, OPENBLAS_NUM_THREADS, GLIBC_TUNABLES,
    LD_LIBRARY_PATH (which OpenBLAS build Debian's torch loads)
    TSR_BENCH_FASHION_DIR     Fashion-MNIST IDX files (default: Debian's
                              dataset-fashion-mnist folder)

Speaks the protocol of protocol.py on stdin/stdout.
"""

import ctypes
import gzip
import os
import re
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from protocol import NotYet, Server  # noqa: E402

THREADS = int(os.environ.get("TSR_BENCH_TORCH_THREADS", "2"))
torch.set_num_threads(THREADS)
try:
    torch.set_num_interop_threads(1)
except RuntimeError:
    pass
torch.manual_seed(0)

DEVICE_NAME = os.environ.get("TSR_BENCH_TORCH_DEVICE", "").strip() or "cpu"
try:
    DEVICE = torch.device(DEVICE_NAME)
except RuntimeError:
    DEVICE = torch.device("meta")  # not a device name: reported below
CUDA = DEVICE.type == "cuda"
DEVICE_ERROR = ""
if DEVICE.type not in ("cpu", "cuda"):
    DEVICE_ERROR = f"TSR_BENCH_TORCH_DEVICE={DEVICE_NAME}: this peer runs on cpu or cuda only"
elif CUDA and not torch.cuda.is_available():
    built = (f"built for CUDA {torch.version.cuda}: no GPU or driver" if torch.version.cuda
             else "a build without CUDA")
    DEVICE_ERROR = (f"TSR_BENCH_TORCH_DEVICE={DEVICE_NAME} but torch.cuda.is_available() is "
                    f"false (torch {torch.__version__}, {built}); not falling back to cpu")
elif CUDA and (DEVICE.index or 0) >= torch.cuda.device_count():
    DEVICE_ERROR = (f"TSR_BENCH_TORCH_DEVICE={DEVICE_NAME} but torch sees "
                    f"{torch.cuda.device_count()} GPU(s)")

FASHION_DIR = os.environ.get("TSR_BENCH_FASHION_DIR", "/usr/share/datasets/fashion-mnist")


def dev(*tensors):
    """|tensors| on DEVICE. They are made on the CPU first, so that a cuda run
    starts from the same values as a cpu run; setup is not timed."""
    moved = tuple(t.to(DEVICE) for t in tensors)
    return moved if len(moved) > 1 else moved[0]


def mlp():
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10)).to(DEVICE)


def cnn():
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(),
                         nn.Linear(128, 10)).to(DEVICE)


class Dispatch:
    """Out-of-place add of two 16-float tensors."""

    def setup(self, arg):
        self.a, self.b = dev(torch.rand(16), torch.rand(16))

    def iterate(self):
        self.a + self.b


class Sgemm:
    def setup(self, n):
        self.a, self.b = dev(torch.rand(n, n) - 0.5, torch.rand(n, n) - 0.5)

    def iterate(self):
        torch.mm(self.a, self.b)


class Add16M:
    def setup(self, arg):
        n = 16 * 1024 * 1024
        self.a, self.b = dev(torch.rand(n), torch.rand(n))

    def iterate(self):
        self.a + self.b


class Conv:
    """Forward and backward of the CNN's two convolutions at batch 64: layer 1
    without the input gradient (its input is data), layer 2 with it."""

    def setup(self, arg):
        self.c1, self.c2 = nn.Conv2d(1, 32, 3).to(DEVICE), nn.Conv2d(32, 64, 3).to(DEVICE)
        self.x1 = dev(torch.randn(64, 1, 28, 28))
        self.x2 = dev(torch.randn(64, 32, 13, 13)).requires_grad_()
        self.dy1, self.dy2 = dev(torch.randn(64, 32, 26, 26), torch.randn(64, 64, 11, 11))

    def iterate(self):
        y1 = self.c1(self.x1)
        torch.autograd.grad(y1, [self.c1.weight, self.c1.bias], self.dy1)
        y2 = self.c2(self.x2)
        torch.autograd.grad(y2, [self.x2, self.c2.weight, self.c2.bias], self.dy2)


class MlpTrain:
    """One SGD-momentum step of the MLP at batch 128."""

    def setup(self, arg):
        self.model = mlp()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.x, self.y = dev(torch.randn(128, 784), torch.randint(0, 10, (128,)))

    def iterate(self):
        self.opt.zero_grad(set_to_none=True)
        F.cross_entropy(self.model(self.x), self.y).backward()
        self.opt.step()


class CnnTrain:
    """One Adam step of the CNN at batch 64."""

    def setup(self, arg):
        self.model = cnn()
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.x, self.y = dev(torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,)))

    def iterate(self):
        self.opt.zero_grad(set_to_none=True)
        F.cross_entropy(self.model(self.x), self.y).backward()
        self.opt.step()


class MlpInfer:
    """The MLP at batch 1, inference mode."""

    def setup(self, arg):
        self.model = mlp().eval()
        self.x = dev(torch.randn(1, 784))

    def batch_context(self):
        return torch.inference_mode()

    def iterate(self):
        self.model(self.x)


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    rank = magic & 0xFF
    dims = struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank])
    flat = torch.frombuffer(bytearray(data[4 + 4 * rank:]), dtype=torch.uint8)
    return flat.reshape(dims)


class FashionEpoch:
    """One epoch of the CNN (Adam, batch 64, shuffled) on Fashion-MNIST from a
    fresh initialisation, then the test accuracy; data decoding is setup."""

    def setup(self, arg):
        names = ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                 "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]
        paths = [os.path.join(FASHION_DIR, n) for n in names]
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            raise NotYet(f"Fashion-MNIST not found ({missing[0]}); Debian: dataset-fashion-mnist")
        xtr, ytr, xte, yte = (read_idx(p) for p in paths)
        self.xtr = dev((xtr.float() / 255.0).unsqueeze(1))
        self.ytr = dev(ytr.long())
        self.xte = dev((xte.float() / 255.0).unsqueeze(1))
        self.yte = dev(yte.long())
        self.epoch = 0
        self.accuracy = None

    def iterate(self):
        torch.manual_seed(self.epoch)
        self.epoch += 1
        model = cnn()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        perm = dev(torch.randperm(self.xtr.shape[0]))
        for i in range(0, self.xtr.shape[0], 64):
            idx = perm[i:i + 64]
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(self.xtr[idx]), self.ytr[idx]).backward()
            opt.step()
        correct = 0
        with torch.inference_mode():
            for i in range(0, self.xte.shape[0], 1000):
                pred = model(self.xte[i:i + 1000]).argmax(1)
                correct += int((pred == self.yte[i:i + 1000]).sum())
        self.accuracy = correct / self.xte.shape[0]

    def extra(self):
        return {"test_accuracy": self.accuracy}


WORKLOADS = {
    "dispatch": Dispatch, "sgemm": Sgemm, "add_16M": Add16M, "conv": Conv,
    "mlp_train": MlpTrain, "cnn_train": CnnTrain, "mlp_infer": MlpInfer,
    "fashion_epoch": FashionEpoch,
}


def loaded_blas():
    """The BLAS libraries mapped into this process, and OpenBLAS's kernel."""
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            base = os.path.basename(path)
            if any(k in base for k in ("blas", "mkl", "lapack", "gomp", "iomp")):
                libs.add(path)
    corename = ""
    for path in sorted(libs):
        if "openblas" in os.path.basename(path):
            try:
                lib = ctypes.CDLL(path)
                lib.openblas_get_corename.restype = ctypes.c_char_p
                corename = lib.openblas_get_corename().decode()
            except (OSError, AttributeError):
                pass
    return sorted(libs), corename


def info():
    Sgemm().setup(8)  # make sure the BLAS is loaded before looking
    torch.mm(torch.rand(8, 8), torch.rand(8, 8))
    libs, corename = loaded_blas()
    config = torch.__config__.show()
    blas = re.findall(r"BLAS_INFO=([^,\s]+)", config)
    blas += [l.strip(" -") for l in config.splitlines() if "Math Kernel" in l or "MKL-DNN" in l]
    return {
        "name": "torch",
        "version": torch.__version__,
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "torch_threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "parallel_info": torch.__config__.parallel_info(),
        "build": blas,
        "loaded_libraries": libs,
        "openblas_corename": corename,
        "mkldnn": torch.backends.mkldnn.is_available(),
        **device_info(),
    }


def device_info():
    """Where the workloads run: the device, and on cuda the GPU and CUDA versions."""
    if not CUDA:
        return {"device": "cpu"}
    index = DEVICE.index if DEVICE.index is not None else torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    return {
        "device": f"cuda:{index}",
        "gpu": torch.cuda.get_device_name(index),
        "gpu_memory_gib": round(props.total_memory / 2 ** 30, 1),
        "compute_capability": f"{props.major}.{props.minor}",
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
    }


class NoDevice:
    """Stands in for every workload when the asked-for device is missing: an
    error, so that the harness reports a failure instead of timing the cpu."""

    def setup(self, arg):
        raise RuntimeError(DEVICE_ERROR)


def info_or_error():
    if DEVICE_ERROR:
        raise RuntimeError(DEVICE_ERROR)
    return info()


if __name__ == "__main__":
    if DEVICE_ERROR:
        print(f"torch_peer: {DEVICE_ERROR}", file=sys.stderr, flush=True)
        WORKLOADS = {name: NoDevice for name in WORKLOADS}
    elif CUDA and DEVICE.index is not None:
        torch.cuda.set_device(DEVICE.index)  # the device torch.cuda.synchronize waits for
    Server(WORKLOADS, info_or_error, sync=torch.cuda.synchronize if CUDA else None).serve()
