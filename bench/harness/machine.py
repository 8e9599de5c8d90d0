"""What the run ran on: CPU, cores, ISA, memory, software versions, and how
busy the machine was with other work while it ran."""

import os
import platform
import re
import subprocess
import time


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _run(argv, cwd=None):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd=cwd)
        return out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


ISA_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
             "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16")


def cpu():
    text = _read("/proc/cpuinfo")
    model = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
    flags = re.search(r"^flags\s*:\s*(.*)$", text, re.M)
    flag_set = set(flags.group(1).split()) if flags else set()
    mem = re.search(r"^MemTotal:\s*(\d+)", _read("/proc/meminfo"), re.M)
    cache = _run(["getconf", "LEVEL3_CACHE_SIZE"])
    return {
        "model": model.group(1).strip() if model else platform.processor(),
        "logical_cpus": os.cpu_count(),
        "cpus_allowed": len(os.sched_getaffinity(0)),
        "isa": [f for f in ISA_FLAGS if f in flag_set],
        "hypervisor": "hypervisor" in flag_set,
        "memory_gib": round(int(mem.group(1)) / 1024 / 1024, 1) if mem else None,
        "l3_cache_bytes": int(cache) if cache.isdigit() else None,
        "kernel": platform.release(),
        "glibc": " ".join(platform.libc_ver()),
    }


def tessera_commit(root):
    commit = _run(["git", "rev-parse", "HEAD"], cwd=root)
    if not commit:
        return {"commit": "unknown", "dirty": None}
    # Read-only: lists changes, changes nothing.
    status = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root)
    return {"commit": commit, "dirty": bool(status),
            "subject": _run(["git", "log", "-1", "--format=%s"], cwd=root)}


def compiler():
    return (_run(["cc", "--version"]).splitlines() or ["unknown"])[0]


def loadavg():
    parts = _read("/proc/loadavg").split()
    return [float(x) for x in parts[:3]] if len(parts) >= 3 else None


class BusyMeter:
    """CPU time spent by processes other than the harness and one worker,
    in cores, between start() and stop(): how loaded the machine was."""

    TICK = os.sysconf("SC_CLK_TCK")

    @staticmethod
    def _busy_seconds():
        fields = _read("/proc/stat").splitlines()[0].split()[1:]
        values = [int(x) for x in fields]
        idle = values[3] + (values[4] if len(values) > 4 else 0)
        guest = sum(values[8:10]) if len(values) > 9 else 0  # already counted in user
        return (sum(values) - idle - guest) / BusyMeter.TICK

    def start(self, worker):
        self.worker = worker
        self.t0 = time.perf_counter()
        self.busy0 = self._busy_seconds()
        self.self0 = sum(os.times()[:2])
        self.worker0 = worker.cpu_seconds()

    def stop(self):
        wall = time.perf_counter() - self.t0
        busy = self._busy_seconds() - self.busy0
        own = (sum(os.times()[:2]) - self.self0) + (self.worker.cpu_seconds() - self.worker0)
        return wall, max(0.0, busy - own)
