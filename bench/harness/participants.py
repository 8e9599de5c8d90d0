"""Participants (Tessera, its peers, the physical limits), their configurations,
and the worker processes that run them.

A configuration is one way of starting a participant: its environment
(thread counts, glibc malloc tunables, which OpenBLAS build) and, for Python
peers, the interpreter. The harness tries every configuration of a
participant and reports the fastest; the JSON lists them all.
"""

import json
import os
import select
import subprocess
import time
from dataclasses import dataclass, field

# glibc keeps freed memory instead of returning it to the OS on every free:
# no mmap for large blocks (they come from the heap and are reused), and the
# heap is trimmed only past 16 GiB. Without it, every large tensor PyTorch
# frees is unmapped and the next one page-faults in again.
# The top pad makes the heap grow in 1 GiB steps, so that it settles after a
# couple of iterations instead of a dozen.
KEEP_MEMORY = ("glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184:"
               "glibc.malloc.top_pad=1073741824")

# Thread variables a configuration sets explicitly; inherited values are
# dropped so that one configuration never leaks into another.
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "GLIBC_TUNABLES", "TSR_BENCH_THREADS", "TSR_BENCH_TORCH_THREADS",
               "TSR_BENCH_ORT_THREADS", "TSR_BENCH_ORT_SPINNING", "TSR_NUM_THREADS",
               "TSR_BENCH_TORCH_DEVICE")

DEBIAN_OPENBLAS_OPENMP = "/usr/lib/x86_64-linux-gnu/openblas-openmp"


@dataclass
class Config:
    name: str
    argv: list
    env: dict                       # variables set (None: removed)
    threads: int = 1                # cores it computes on (for choosing finalists)

    def environment(self):
        env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
        for k, v in self.env.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return env

    def shown_env(self):
        return {k: ("(unset)" if v is None else v) for k, v in sorted(self.env.items())}


@dataclass
class Participant:
    key: str                 # "tessera", "torch_pypi", ...
    title: str               # table header
    kind: str                # "tessera" | "peer" | "limit"
    configs: list
    available: bool = True
    reason: str = ""         # why not available
    info: dict = field(default_factory=dict)


class WorkerError(RuntimeError):
    pass


class Worker:
    """A running worker process speaking the line protocol."""

    def __init__(self, participant, config, cpus, log_dir):
        self.participant = participant
        self.config = config
        os.makedirs(log_dir, exist_ok=True)
        self.log_path = os.path.join(log_dir, f"{participant.key}-{config.name}.log")
        self.log = open(self.log_path, "a")
        self.log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(config.argv)}\n")
        self.log.flush()

        def pin():
            if cpus is not None:
                os.sched_setaffinity(0, cpus)

        self.proc = subprocess.Popen(
            config.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
            env=config.environment(), text=True, bufsize=1, preexec_fn=pin)

    def request(self, line, timeout):
        if self.proc.poll() is not None:
            raise WorkerError(f"worker exited with status {self.proc.returncode} "
                              f"(log: {self.log_path})")
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise WorkerError(f"worker closed its input (log: {self.log_path})")
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.close(kill=True)
            raise WorkerError(f"no answer to '{line}' within {timeout:.0f} s; killed")
        answer = self.proc.stdout.readline()
        if not answer:
            code = self.proc.wait()
            raise WorkerError(f"worker exited with status {code} during '{line}' "
                              f"(log: {self.log_path})")
        try:
            return json.loads(answer)
        except json.JSONDecodeError:
            raise WorkerError(f"malformed answer {answer[:200]!r} (log: {self.log_path})")

    def cpu_seconds(self):
        """CPU time used so far by all threads of the worker."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return 0.0

    def close(self, kill=False):
        if self.proc.poll() is None:
            try:
                if not kill:
                    self.proc.stdin.write("quit\n")
                    self.proc.stdin.flush()
                    self.proc.wait(timeout=20)
            except (BrokenPipeError, subprocess.TimeoutExpired, OSError):
                pass
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def _thread_configs(cores, blas_var, python_argv, extra_env=None, variants=None):
    """Torch configurations: torch threads / BLAS threads / malloc, and for
    Debian's torch which OpenBLAS build it loads."""
    configs = []
    thread_choices = [(cores, cores), (cores, 1), (1, 1)] if cores > 1 else [(1, 1)]
    for torch_threads, blas_threads in thread_choices:
        for keep in (False, True):
            for variant_name, variant_env in (variants or [("", {})]):
                env = {"OMP_NUM_THREADS": str(torch_threads),
                       "TSR_BENCH_TORCH_THREADS": str(torch_threads),
                       "MKL_NUM_THREADS": str(blas_threads),
                       "OPENBLAS_NUM_THREADS": str(blas_threads)}
                env.update(extra_env or {})
                env.update(variant_env)
                if keep:
                    env["GLIBC_TUNABLES"] = KEEP_MEMORY
                name = f"t{torch_threads}-{blas_var}{blas_threads}"
                name += "-keepmem" if keep else ""
                name += variant_name
                configs.append(Config(name, list(python_argv), env, torch_threads))
    return configs


QUICK_TORCH = ("t{c}-{b}{c}", "t{c}-{b}1-keepmem", "t1-{b}1-keepmem")


def _quick_subset(configs, cores, blas_var):
    wanted = {q.format(c=cores, b=blas_var) for q in QUICK_TORCH}
    chosen = [c for c in configs if c.name in wanted]
    return chosen or configs[:1]


def _probe_python(python, module):
    """(ok, message): whether |python| can import |module|."""
    if not python or not os.path.exists(python):
        return False, f"{python or 'python'} not found"
    try:
        out = subprocess.run([python, "-c", f"import {module}; print({module}.__version__)"],
                             capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired:
        return False, f"'import {module}' took over 180 s"
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["failed"])[-1]
        return False, f"{python}: import {module}: {last}"
    return True, out.stdout.strip()


def build(root, build_dir, venv_python, cores, quick, only=None, libtorch_peer="",
          torch_device="cpu"):
    """The participants of this run, available or not (with the reason).
    |torch_device| is where the PyTorch peers (PyPI, Debian) run: "cpu" or
    "cuda[:N]" (TSR_BENCH_TORCH_DEVICE); on cuda their titles say so, and a
    torch without a usable GPU fails every workload instead of using the CPU."""
    bench = os.path.join(root, "bench")
    peers = os.path.join(bench, "peers")
    parts = []

    worker = os.path.join(build_dir, "bin", "tsr-bench-worker")
    tessera_threads = [cores, 1] if cores > 1 else [1]
    device = os.environ.get("TSR_DEVICE")
    tessera = Participant("tessera", "Tessera", "tessera", [
        Config(f"threads{t}", [worker], {"TSR_BENCH_THREADS": str(t),
                                         "OMP_NUM_THREADS": str(t)}, t)
        for t in tessera_threads])
    if device:
        for c in tessera.configs:
            c.env["TSR_DEVICE"] = device
    if not os.access(worker, os.X_OK):
        tessera.available, tessera.reason = False, f"{worker} not built"
    parts.append(tessera)

    # Tessera's OpenCL device beside the others (issue 9): the same worker on
    # opencl:0, at the machine's thread count (the OpenCL driver brings its
    # own threads: PoCL runs one per core).
    opencl_plugin = os.path.join(build_dir, "lib", "libtessera-opencl.so")
    tessera_opencl = Participant("tessera_opencl", "Tessera on OpenCL", "peer", [
        Config(f"threads{cores}", [worker], {"TSR_BENCH_THREADS": str(cores),
                                             "OMP_NUM_THREADS": str(cores),
                                             "TSR_DEVICE": "opencl:0"}, cores)])
    if not os.access(worker, os.X_OK):
        tessera_opencl.available, tessera_opencl.reason = False, f"{worker} not built"
    elif not os.path.exists(opencl_plugin):
        tessera_opencl.available, tessera_opencl.reason = False, (
            "the OpenCL plugin is not built (no OpenCL loader/headers)")
    parts.append(tessera_opencl)

    # On a GPU the torch peers' thread and malloc settings only steer the host
    # side: one configuration (all cores) and no tuning, which also keeps
    # tools/device-check.sh's bench step within its budget.
    on_gpu = torch_device != "cpu"
    where = f", {torch_device.upper()}" if on_gpu else ""
    torch_env = {"TSR_BENCH_TORCH_DEVICE": torch_device}
    python = venv_python
    ok, message = _probe_python(python, "torch") if python else (False, "no venv (PyPI)")
    torch_pypi = Participant("torch_pypi", f"PyTorch {message if ok else ''} (PyPI{where})"
                             .replace("  ", " "), "peer", [])
    if ok:
        torch_pypi.configs = _thread_configs(
            cores, "mkl", [python, os.path.join(peers, "torch_peer.py")], torch_env)
        if quick or on_gpu:
            torch_pypi.configs = _quick_subset(torch_pypi.configs, cores, "mkl")
        if on_gpu:
            torch_pypi.configs = torch_pypi.configs[:1]
    else:
        torch_pypi.available, torch_pypi.reason = False, message
        torch_pypi.title = f"PyTorch (PyPI{where})"
    parts.append(torch_pypi)

    debian_python = "/usr/bin/python3"
    ok, message = _probe_python(debian_python, "torch")
    torch_debian = Participant("torch_debian", f"PyTorch {message if ok else ''} (Debian{where})"
                               .replace("  ", " "), "peer", [])
    if ok:
        variants = [("", {})]
        if os.path.exists(os.path.join(DEBIAN_OPENBLAS_OPENMP, "libblas.so.3")):
            variants.append(("-openblas-openmp", {"LD_LIBRARY_PATH": DEBIAN_OPENBLAS_OPENMP}))
        if os.environ.get("OPENBLAS_CORETYPE") or os.environ.get("OPENBLAS_L2_SIZE"):
            variants += [(n + "-coretype-unset", dict(e, OPENBLAS_CORETYPE=None,
                                                      OPENBLAS_L2_SIZE=None))
                         for n, e in list(variants)]
        torch_debian.configs = _thread_configs(
            cores, "openblas", [debian_python, os.path.join(peers, "torch_peer.py")],
            torch_env, variants=variants)
        if quick or on_gpu:
            torch_debian.configs = _quick_subset(torch_debian.configs, cores, "openblas")
        if on_gpu:
            torch_debian.configs = torch_debian.configs[:1]
    else:
        torch_debian.available, torch_debian.reason = False, message
        torch_debian.title = f"PyTorch (Debian{where})"
    parts.append(torch_debian)

    libtorch = Participant("libtorch", "libtorch (C++)", "peer", [])
    if libtorch_peer and os.access(libtorch_peer, os.X_OK):
        version = ""
        try:
            with open(os.path.join(os.path.dirname(libtorch_peer), "torch-version")) as f:
                version = f.read().strip()
        except OSError:
            pass
        # The C++ peer has no device option: it stays on the CPU, and says so
        # when the other torch peers are on a GPU.
        libtorch.title = f"libtorch {version} (C++{', CPU' if on_gpu else ''})".replace("  ", " ")
        libtorch.configs = _thread_configs(cores, "mkl", [libtorch_peer])
        if quick:
            libtorch.configs = _quick_subset(libtorch.configs, cores, "mkl")
    else:
        libtorch.available = False
        libtorch.reason = ("not built: it needs the PyPI torch and g++ (bench/run builds it)"
                           if not libtorch_peer else f"{libtorch_peer} not found")
    parts.append(libtorch)

    ok, message = _probe_python(python, "onnxruntime") if python else (False, "no venv (PyPI)")
    ort = Participant("onnxruntime", f"ONNX Runtime {message if ok else ''}".strip(), "peer", [])
    if ok:
        for threads in ([cores, 1] if cores > 1 else [1]):
            for spin in ("1", "0"):
                ort.configs.append(Config(
                    f"intra{threads}-spin{spin}", [python, os.path.join(peers, "ort_peer.py")],
                    {"TSR_BENCH_ORT_THREADS": str(threads), "TSR_BENCH_ORT_SPINNING": spin,
                     "OMP_NUM_THREADS": str(threads)}, threads))
        if quick:
            ort.configs = ort.configs[:2]
    else:
        ort.available, ort.reason = False, message
    parts.append(ort)

    limits_bin = os.path.join(build_dir, "bin", "tsr-bench-limits")
    limits = Participant("limits", "physical limit", "limit", [
        Config(f"threads{t}", [limits_bin], {"OMP_NUM_THREADS": str(t),
                                             "TSR_BENCH_THREADS": str(t)}, t)
        for t in ([cores, 1] if cores > 1 else [1])])
    if not os.access(limits_bin, os.X_OK):
        limits.available, limits.reason = False, f"{limits_bin} not built (needs libdnnl-dev)"
    parts.append(limits)

    if only:
        for p in parts:
            if p.key not in only and p.key != "tessera":
                p.available, p.reason = False, "left out (--peers)"
    return parts
