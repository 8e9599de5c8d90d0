"""The worker line protocol, Python side (the C side: bench/common/bench_protocol.h).

A worker reads one request per line on stdin and answers one JSON object per
line on stdout:

    info                                   -> {"ok": true, "info": {...}}
    run WORKLOAD ARG WARMUP SAMPLES INNER  -> {"ok": true, "samples": [...], "extra": {...}}
                                              {"ok": false, "not_yet": true, "reason": "..."}
                                              {"ok": false, "error": "..."}
    quit

A batch runs WARMUP untimed iterations, then SAMPLES timed samples of INNER
iterations each; a sample is the mean time of one iteration in seconds.

A peer module defines workloads as classes with setup(arg) and iterate(), and
optionally batch_context() (a context manager held around the whole batch)
and extra() (a dict reported with the samples, e.g. test accuracy). A peer on
an asynchronous device passes sync (e.g. torch.cuda.synchronize): it is called
after every iteration, warm-up and timed, so that each one has finished before
the next starts and the clock is read.
"""

import contextlib
import json
import sys
import time
import traceback


class NotYet(Exception):
    """The peer cannot run this workload; the message says why."""


def _reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class Server:
    def __init__(self, workloads, info, sync=None):
        self.workloads = workloads  # name -> class
        self.info = info            # callable -> dict
        self.sync = sync            # callable or None: waits for the device
        self.current = None         # (name, arg, instance)

    def _instance(self, name, arg):
        if self.current is not None and self.current[:2] == (name, arg):
            return self.current[2]
        self.current = None  # let the previous workload's tensors go first
        cls = self.workloads.get(name)
        if cls is None:
            raise NotYet(f"this peer has no {name} workload")
        instance = cls()
        instance.setup(arg)
        self.current = (name, arg, instance)
        return instance

    def run(self, name, arg, warmup, samples, inner):
        w = self._instance(name, arg)
        context = w.batch_context() if hasattr(w, "batch_context") else contextlib.nullcontext()
        out = []
        iterate = w.iterate
        if self.sync is not None:
            step, sync = w.iterate, self.sync

            def iterate():
                step()
                sync()
        with context:
            for _ in range(warmup):
                iterate()
            for _ in range(samples):
                t0 = time.perf_counter()
                for _ in range(inner):
                    iterate()
                out.append((time.perf_counter() - t0) / inner)
        reply = {"ok": True, "samples": out}
        if hasattr(w, "extra"):
            reply["extra"] = w.extra()
        return reply

    def serve(self):
        for line in sys.stdin:
            words = line.split()
            if not words:
                continue
            if words[0] == "quit":
                break
            try:
                if words[0] == "info" and len(words) == 1:
                    _reply({"ok": True, "info": self.info()})
                elif words[0] == "run" and len(words) == 6:
                    name, arg, warmup, samples, inner = (
                        words[1], int(words[2]), int(words[3]), int(words[4]), int(words[5]))
                    _reply(self.run(name, arg, warmup, samples, inner))
                else:
                    _reply({"ok": False, "error": f"malformed request: {line.strip()!r}"})
            except NotYet as e:
                self.current = None
                _reply({"ok": False, "not_yet": True, "reason": str(e)})
            except Exception as e:  # reported, never hidden: the harness shows it
                self.current = None
                traceback.print_exc(file=sys.stderr)
                _reply({"ok": False, "error": f"{type(e).__name__}: {e}"})
