"""The canonical workloads: what each measures, its unit, and how it is batched.

Every participant (Tessera's tsr-bench-worker, the peers in bench/peers/, the
physical limits in tsr-bench-limits) implements the workloads by name; a row
of the table is one workload at one size. To add a workload: a Row here, the
same name in bench/tessera/worker.c and in each peer that can run it (see
bench/README.md).
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Batch:
    """One batch: |warmup| untimed iterations, then |samples| timed samples
    of |inner| iterations each."""
    warmup: int
    samples: int
    inner: int


@dataclass(frozen=True)
class Row:
    key: str            # unique id in the JSON and on the command line
    workload: str       # name in the worker protocol
    arg: int            # size parameter (sgemm: n), 0 if none
    title: str          # shown in tables
    what: str           # one line for the docs
    unit: str           # display unit of the time per iteration
    scale: float        # seconds -> unit
    flops: float = 0.0  # per iteration, for GFLOP/s (0: not shown)
    bytes: float = 0.0  # per iteration, for GB/s (0: not shown)
    full: Batch = Batch(1, 5, 1)
    quick: Batch = Batch(1, 3, 1)
    tune: Batch = Batch(1, 2, 1)       # per configuration while choosing a peer's best
    tuned: bool = True                 # False: uses the configuration chosen for |tune_as|
    tune_as: str = ""
    in_quick: bool = True
    rounds_full: int = 0               # rounds of a full run (0: the run's default)
    peers: tuple = field(default=())   # extra notes


def _sgemm(n, full, quick, tune):
    return Row(f"sgemm_{n}", "sgemm", n, f"sgemm {n}",
               f"c = a @ b, {n}x{n} float32, result allocated by the op", "ms", 1e3,
               flops=2.0 * n ** 3, full=full, quick=quick, tune=tune)


ROWS = [
    Row("dispatch", "dispatch", 0, "dispatch",
        "eager add of two 16-float tensors, result allocated and released (per-op overhead)",
        "us", 1e6, full=Batch(500, 9, 10000), quick=Batch(200, 5, 5000),
        tune=Batch(200, 3, 3000)),
    _sgemm(256, Batch(3, 7, 10), Batch(2, 5, 5), Batch(2, 3, 5)),
    _sgemm(1024, Batch(1, 5, 1), Batch(1, 3, 1), Batch(1, 2, 1)),
    _sgemm(2048, Batch(1, 3, 1), Batch(1, 2, 1), Batch(0, 1, 1)),
    Row("add_16M", "add_16M", 0, "add_16M",
        "c = a + b over 16M floats (3 x 64 MiB), result allocated by the op", "ms", 1e3,
        bytes=12.0 * 16 * 1024 * 1024, full=Batch(3, 5, 1), quick=Batch(2, 3, 1),
        tune=Batch(2, 3, 1)),
    Row("conv", "conv", 0, "conv",
        "conv2d forward + backward of the CNN's two layers at batch 64 (no input gradient "
        "for layer 1)", "ms", 1e3, flops=2 * (64 * 32 * 26 * 26 * 9 * 2 +
                                             64 * 64 * 11 * 11 * 32 * 9 * 3),
        full=Batch(1, 5, 1), quick=Batch(1, 3, 1), tune=Batch(1, 2, 1)),
    Row("mlp_train", "mlp_train", 0, "mlp_train",
        "MLP 784-512-512-10, ReLU, cross-entropy, SGD momentum 0.9, batch 128: one step",
        "ms", 1e3, flops=410.8e6, full=Batch(3, 5, 5), quick=Batch(2, 3, 3),
        tune=Batch(2, 2, 3)),
    Row("cnn_train", "cnn_train", 0, "cnn_train",
        "CNN (2 conv, 2 linear), cross-entropy, Adam, batch 64: one step", "ms", 1e3,
        flops=985e6, full=Batch(2, 5, 2), quick=Batch(1, 3, 2), tune=Batch(1, 2, 2)),
    Row("mlp_infer", "mlp_infer", 0, "mlp_infer",
        "the MLP at batch 1, inference: latency", "us", 1e6,
        flops=2.0 * (784 * 512 + 512 * 512 + 512 * 10), full=Batch(50, 7, 200),
        quick=Batch(20, 5, 100), tune=Batch(20, 3, 100)),
    Row("fashion_epoch", "fashion_epoch", 0, "fashion_epoch",
        "one epoch of the CNN on Fashion-MNIST (60k images, Adam, batch 64) from a fresh "
        "initialisation, then test accuracy", "s", 1.0, full=Batch(0, 1, 1),
        quick=Batch(0, 1, 1), tuned=False, tune_as="cnn_train", in_quick=False, rounds_full=2),
]

BY_KEY = {r.key: r for r in ROWS}
