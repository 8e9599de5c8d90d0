"""The benchmark harness: Tessera and its peers, side by side, interleaved.

Started by bench/run, which builds the C programs and prepares the peers'
Python environment first; run `bench/run --help` for the options.

Two phases:
1. Tuning. Each participant with more than one configuration (thread
   settings, malloc tunables, BLAS build) runs every workload in every
   configuration, interleaved configuration by configuration, in short
   batches. The fastest median wins, per workload.
2. Measurement. For each workload, Tessera, each peer in its winning
   configuration and the physical limit run batch after batch in rotating
   order (A B C, B C A, ...) for several rounds. The reported median, min and
   max are over all timed samples of these rounds, which are independent of
   the tuning batches that chose the configuration.
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import machine  # noqa: E402
import participants as participants_mod  # noqa: E402
import report  # noqa: E402
from workloads import BY_KEY, ROWS  # noqa: E402

TIMEOUT_S = 900
PRUNE_FACTOR = 2.5
# Time caps that keep a run on a busy machine near its planned length: a
# row's measurement stops adding rounds past ROW_CAP_S (after MIN_ROUNDS),
# a participant's tuning of one row stops after the round that passes
# TUNE_CAP_S.
ROW_CAP_S = {"full": 60.0, "quick": 20.0}
MIN_ROUNDS = {"full": 3, "quick": 2}
TUNE_CAP_S = {"full": 15.0, "quick": 10.0}  # one batch; a fashion epoch on a loaded machine stays well below


def log(message):
    print(message, flush=True)


def rotate(items, k):
    if not items:
        return items
    k %= len(items)
    return items[k:] + items[:k]


class Pool:
    """Worker processes, started on first use and kept for the next batch."""

    def __init__(self, cpus, log_dir, max_alive):
        self.cpus, self.log_dir, self.max_alive = cpus, log_dir, max_alive
        self.workers = {}  # (participant key, config name) -> Worker
        self.infos = {}

    def get(self, part, config):
        key = (part.key, config.name)
        w = self.workers.pop(key, None)
        if w is None:
            while len(self.workers) >= self.max_alive:
                _, oldest = next(iter(self.workers.items()))
                self.close_one(oldest)
            w = participants_mod.Worker(part, config, self.cpus, self.log_dir)
            answer = w.request("info", 300)
            if not answer.get("ok"):
                w.close(kill=True)
                raise participants_mod.WorkerError(answer.get("error", "info failed"))
            self.infos[key] = answer["info"]
        self.workers[key] = w  # most recently used last
        return w

    def close_one(self, w):
        self.workers.pop((w.participant.key, w.config.name), None)
        w.close()

    def close_all(self):
        for w in list(self.workers.values()):
            self.close_one(w)


def run_batch(pool, part, config, row, batch, gap_s):
    """One batch; returns a result dict with status ok / not_yet / error."""
    time.sleep(gap_s)  # lets the previous worker's threads stop spinning
    try:
        w = pool.get(part, config)
    except participants_mod.WorkerError as e:
        return {"status": "error", "reason": f"could not start: {e}"}
    meter = machine.BusyMeter()
    meter.start(w)
    try:
        answer = w.request(f"run {row.workload} {row.arg} {batch.warmup} {batch.samples} "
                           f"{batch.inner}", TIMEOUT_S)
    except participants_mod.WorkerError as e:
        pool.close_one(w)
        return {"status": "error", "reason": str(e)}
    wall, others = meter.stop()
    if answer.get("ok"):
        return {"status": "ok", "samples": answer["samples"], "extra": answer.get("extra", {}),
                "others_cpu_s": others, "wall_s": wall}
    if answer.get("not_yet"):
        return {"status": "not_yet", "reason": answer.get("reason", "")}
    return {"status": "error", "reason": answer.get("error", "unknown error")}


def tune(part, rows, pool, mode, rounds, gap_s, cap_s):
    """Per row: {"finalists": [config names], "tuning": [...], and "status", "reason"
    when no configuration ran it}."""
    out = {}
    if len(part.configs) == 1:
        for row in rows:
            out[row.key] = {"finalists": [part.configs[0].name], "tuning": []}
        return out
    log(f"tuning {part.title}: {len(part.configs)} configurations")
    for row in rows:
        if not row.tuned:
            continue
        if not applicable(part, row):
            out[row.key] = {"finalists": [], "tuning": [], "status": "n/a"}
            continue
        samples = {c.name: [] for c in part.configs}
        status = {c.name: "not run" for c in part.configs}
        reasons = {}
        pruned = set()
        started = time.perf_counter()
        for r in range(rounds):
            if r > 0 and time.perf_counter() - started > cap_s:
                break  # a loaded machine: one round has to do
            for config in rotate(part.configs, r):
                if status[config.name] in ("not_yet", "error") or config.name in pruned:
                    continue
                res = run_batch(pool, part, config, row, row.tune, gap_s)
                status[config.name] = res["status"]
                if res["status"] == "ok":
                    samples[config.name] += res["samples"]
                else:
                    reasons[config.name] = res.get("reason", "")
            # A configuration several times slower than the best after a round
            # cannot win: it is not run again.
            medians = {n: statistics.median(v) for n, v in samples.items()
                       if v and status[n] == "ok"}
            if medians:
                best = min(medians.values())
                pruned |= {n for n, m in medians.items() if m > PRUNE_FACTOR * best}
        tuning = []
        for c in part.configs:
            entry = {"config": c.name, "status": status[c.name]}
            if c.name in pruned:
                entry["pruned"] = True
            if status[c.name] == "ok":
                entry["median_s"] = statistics.median(samples[c.name])
                entry["min_s"] = min(samples[c.name])
            else:
                entry["reason"] = reasons.get(c.name, "")
            tuning.append(entry)
        ok = sorted((t for t in tuning if t["status"] == "ok"), key=lambda t: t["median_s"])
        if ok:
            # The best, and the best computing on a different number of cores:
            # on a busy machine which of the two wins can change within
            # minutes, so both go on to the measurement.
            threads = {c.name: c.threads for c in part.configs}
            finalists = [ok[0]["config"]]
            other = [t for t in ok if threads[t["config"]] != threads[ok[0]["config"]]]
            if other:
                finalists.append(other[0]["config"])
            out[row.key] = {"finalists": finalists, "tuning": tuning}
            log(f"  {row.title:14} " + ",  ".join(
                f"{t['config']} {t['median_s'] * row.scale:.4g}" for t in ok
                if t["config"] in finalists) +
                f" {row.unit}   (slowest: {ok[-1]['config']} "
                f"{ok[-1]['median_s'] * row.scale:.4g})")
        else:
            first = tuning[0]
            out[row.key] = {"finalists": [], "tuning": tuning, "status": first["status"],
                            "reason": first.get("reason", "")}
            log(f"  {row.title:14} {first['status']}: {first.get('reason', '')}")
    # Rows that are not tuned use the winner of another row.
    for row in rows:
        if not row.tuned:
            src = out.get(row.tune_as, {}).get("finalists") or [part.configs[0].name]
            out[row.key] = {"finalists": src[:1], "tuning": [], "chosen_from": row.tune_as}
    pool.close_all()
    return out


def measure(row, parts, choices, pool, rounds, mode, gap_s):
    batch = row.full if mode == "full" else row.quick
    entrants, results, runs = [], {}, {}
    for part in parts:
        if not part.available:
            results[part.key] = {"status": "unavailable", "reason": part.reason}
            continue
        choice = choices[part.key].get(row.key, {})
        if not choice.get("finalists"):
            results[part.key] = {"status": choice.get("status", "not_yet"),
                                 "reason": choice.get("reason", ""),
                                 "tuning": choice.get("tuning", [])}
            continue
        results[part.key] = {"status": "ok", "tuning": choice.get("tuning", [])}
        if "chosen_from" in choice:
            results[part.key]["config_chosen_by"] = choice["chosen_from"]
        for name in choice["finalists"]:
            config = next(c for c in part.configs if c.name == name)
            entrants.append((part, config))
            runs[(part.key, name)] = {"config": name, "status": "ok", "samples_s": [],
                                      "others_cpu_s": 0.0, "wall_s": 0.0, "extra": {},
                                      "env": config.shown_env()}
    started, done = time.perf_counter(), 0
    if mode == "full" and row.rounds_full:
        rounds = row.rounds_full
    for r in range(rounds):
        if r >= MIN_ROUNDS[mode] and time.perf_counter() - started > ROW_CAP_S[mode]:
            log(f"  {row.title}: {r} rounds in {time.perf_counter() - started:.0f} s; "
                f"stopping at the time cap ({ROW_CAP_S[mode]} s)")
            break
        done = r + 1
        for part, config in rotate(entrants, r):
            run = runs[(part.key, config.name)]
            if run["status"] != "ok":
                continue
            got = run_batch(pool, part, config, row, batch, gap_s)
            if got["status"] != "ok":
                run.update(status=got["status"], reason=got["reason"])
                if got["status"] == "error":
                    log(f"  ERROR {part.title} {config.name} {row.title}: {got['reason']}")
                continue
            run["samples_s"] += got["samples"]
            run["others_cpu_s"] += got["others_cpu_s"]
            run["wall_s"] += got["wall_s"]
            for key, value in got["extra"].items():
                run["extra"].setdefault(key, []).append(value)
    for run in runs.values():
        if run["status"] == "ok" and run["samples_s"]:
            s = run["samples_s"]
            run.update(median_s=statistics.median(s), min_s=min(s), max_s=max(s), n=len(s))
            run["others_cores"] = report.others_load(run)
        # A peak measured with every batch: the median of them; anything else
        # (fashion_epoch's accuracy): the last batch's.
        run["extra"] = {k: statistics.median(v) if k in MEDIAN_EXTRAS else v[-1]
                        for k, v in run["extra"].items()}
        if not run["extra"]:
            del run["extra"]
    for res in results.values():
        res["rounds"] = done
    # Per participant: the finalist with the lowest median is its figure.
    for part_key, res in results.items():
        if res.get("status") != "ok":
            continue
        mine = [run for (k, _), run in runs.items() if k == part_key]
        good = [run for run in mine if "median_s" in run]
        if not good:
            bad = mine[0]
            results[part_key] = dict(res, status=bad["status"], reason=bad.get("reason", ""),
                                     finalists=mine)
            continue
        best = min(good, key=lambda run: run["median_s"])
        res.update({k: v for k, v in best.items() if k not in ("status",)})
        res["finalists"] = [{k: v for k, v in run.items() if k != "samples_s"} for run in mine]
    return results


# Extras a participant reports with every batch whose median the run keeps.
MEDIAN_EXTRAS = ("fma_peak_gflops",)


def applicable(part, row):
    """Peers that never run a workload show '–' instead of 'not yet'."""
    if part.key == "onnxruntime":
        return row.workload == "mlp_infer"
    if part.key == "limits":
        return row.workload in ("sgemm", "add_16M", "mlp_train")
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench/run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="fewer configurations, rounds and samples, no fashion_epoch; writes "
                         "into the build folder and leaves docs/ alone")
    ap.add_argument("--workloads", default="",
                    help="comma-separated rows to run (" + ",".join(r.key for r in ROWS) + ")")
    ap.add_argument("--peers", default="",
                    help="comma-separated peers to include (torch_pypi,torch_debian,"
                         "libtorch,onnxruntime,limits); default: all available")
    ap.add_argument("--rounds", type=int, default=0, help="measurement rounds (default 5, "
                    "quick 3; fewer where a row passes its time cap)")
    ap.add_argument("--torch-device", default=os.environ.get("TSR_BENCH_TORCH_DEVICE") or "cpu",
                    help="where the PyTorch peers (PyPI, Debian) run: cpu or cuda[:N] "
                         "(default: TSR_BENCH_TORCH_DEVICE, else cpu); on cuda every iteration "
                         "is synchronized, their titles say CUDA, and a torch without a GPU "
                         "fails instead of using the CPU")
    ap.add_argument("--cores", type=int, default=2, help="cores every participant gets "
                    "(default 2)")
    ap.add_argument("--out", default="", help="folder for the JSON and the chart")
    ap.add_argument("--docs", choices=["auto", "yes", "no"], default="auto",
                    help="update docs/performance.md (auto: in a full run)")
    ap.add_argument("--gap-ms", type=float, default=50.0,
                    help="pause between batches, so that one worker's spinning threads "
                         "have stopped before the next starts (default 50)")
    ap.add_argument("--report", default="", metavar="JSON",
                    help="render the table, docs and chart from an earlier run; no measuring")
    ap.add_argument("--root", required=True, help=argparse.SUPPRESS)
    ap.add_argument("--build", required=True, help=argparse.SUPPRESS)
    ap.add_argument("--venv-python", default="", help=argparse.SUPPRESS)
    ap.add_argument("--libtorch-peer", default="", help=argparse.SUPPRESS)
    ap.add_argument("--build-type", default="", help=argparse.SUPPRESS)
    ap.add_argument("--setup-notes", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    root = os.path.abspath(args.root)
    mode = "quick" if args.quick else "full"
    publish = args.docs == "yes" or (args.docs == "auto" and mode == "full" and
                                     not args.workloads and not args.peers)
    out_dir = args.out or (os.path.join(root, "bench", "results") if publish
                           else os.path.join(args.build, "bench-results"))
    os.makedirs(out_dir, exist_ok=True)
    docs_path = os.path.join(root, "docs", "performance.md")

    if args.report:
        with open(args.report) as f:
            run = json.load(f)
        publish = args.docs == "yes" or (args.docs == "auto" and run["mode"] == "full")
        out_dir = args.out or os.path.dirname(os.path.abspath(args.report))
        return finish(run, args.report, out_dir, docs_path, publish, root)

    rows = ROWS
    if args.workloads:
        wanted = args.workloads.split(",")
        unknown = [w for w in wanted if w not in BY_KEY]
        if unknown:
            ap.error(f"unknown workloads: {', '.join(unknown)}")
        rows = [BY_KEY[w] for w in wanted]
    if not (args.torch_device == "cpu" or args.torch_device == "cuda" or
            (args.torch_device.startswith("cuda:") and args.torch_device[5:].isdigit())):
        ap.error(f"--torch-device {args.torch_device}: cpu, cuda or cuda:N")
    if mode == "quick":
        skipped = [r for r in rows if not r.in_quick]
        rows = [r for r in rows if r.in_quick]
    else:
        skipped = []
    rounds = args.rounds or (5 if mode == "full" else 3)
    tune_rounds = 2 if mode == "full" else 1
    cores = max(1, min(args.cores, len(os.sched_getaffinity(0))))
    all_cpus = sorted(os.sched_getaffinity(0))
    cpus = set(all_cpus[:cores]) if cores < len(all_cpus) else None
    gap_s = args.gap_ms / 1000.0

    started = datetime.datetime.now(datetime.timezone.utc)
    tinfo = machine.tessera_commit(root)
    run_id = started.strftime("%Y%m%dT%H%M%SZ") + "-" + tinfo["commit"][:7]
    log(f"bench: run {run_id}, {mode} mode, {cores} cores, {rounds} rounds, "
        f"PyTorch on {args.torch_device}; load average {machine.loadavg()}")

    only = set(args.peers.split(",")) if args.peers else None
    parts = participants_mod.build(root, args.build, args.venv_python, cores, mode == "quick",
                                   only, args.libtorch_peer, args.torch_device)
    for p in parts:
        state = f"{len(p.configs)} configuration(s)" if p.available else f"unavailable: {p.reason}"
        log(f"  {p.title}: {state}")
    if not parts[0].available:
        log(f"bench: {parts[0].reason}")
        return 1

    pool = Pool(cpus, os.path.join(args.build, "bench-logs"), max_alive=12)
    load_start = machine.loadavg()
    t0 = time.perf_counter()
    choices = {}
    live = [p for p in parts if p.available]
    try:
        for part in live:
            choices[part.key] = tune(part, rows, pool, mode, tune_rounds, gap_s,
                                     TUNE_CAP_S[mode])
        results = []
        measured = {}
        for row in rows:
            log(f"measuring {row.title}")
            if not row.tuned and row.tune_as in measured:
                # The configuration that won the measurement of the row it
                # follows: more recent than the tuning.
                for p in live:
                    won = measured[row.tune_as].get(p.key, {}).get("config")
                    if won and choices[p.key].get(row.key, {}).get("finalists"):
                        choices[p.key][row.key]["finalists"] = [won]
            res = measure(row, live, choices, pool, rounds, mode, gap_s)
            measured[row.key] = res
            for p in parts:
                if not p.available:
                    res[p.key] = {"status": "not_yet" if p.reason.startswith("not yet")
                                  else "unavailable", "reason": p.reason}
                if not applicable(p, row):
                    res[p.key] = {"status": "n/a"}
            results.append((row, res))
            log("  " + ";  ".join(
                f"{p.title.split(' (')[0]} {res[p.key]['median_s'] * row.scale:.4g} {row.unit}"
                for p in parts if res.get(p.key, {}).get("status") == "ok"))
        infos = dict(pool.infos)
    finally:
        pool.close_all()
    duration = time.perf_counter() - t0

    others = [(r["others_cpu_s"], r["wall_s"]) for _, res in results for r in res.values()
              if r.get("status") == "ok" and r.get("wall_s")]
    per_row = [report.others_load(r) for _, res in results for r in res.values()
               if r.get("status") == "ok"]
    per_row = [x for x in per_row if x is not None]
    versions = {"tessera": dict(tinfo)}
    part_json = []
    for p in parts:
        # The info of the configuration that won most often.
        counts = {}
        for _, res in results:
            c = res.get(p.key, {}).get("config")
            if c:
                counts[c] = counts.get(c, 0) + 1
        best = max(counts, key=counts.get) if counts else (p.configs[0].name if p.configs
                                                           else None)
        p.info = infos.get((p.key, best), {}) or next(
            (i for (k, _), i in infos.items() if k == p.key), {})
        part_json.append({
            "key": p.key, "title": p.title, "kind": p.kind, "available": p.available,
            "reason": p.reason, "info": p.info,
            "configs": [{"name": c.name, "argv": c.argv, "env": c.shown_env()}
                        for c in p.configs]})
        if p.key == "tessera":
            versions["tessera"].update(p.info)
        elif p.key == "limits" and p.info:
            versions["onednn"] = p.info.get("onednn")
            versions["fma_peak_isa"] = p.info.get("fma_peak_isa")
        elif p.available and p.info:
            versions[p.key] = p.info.get("version")
    run = {
        "schema": 1,
        "run_id": run_id,
        "mode": mode,
        "started": started.isoformat(timespec="seconds"),
        "duration_s": round(duration, 1),
        "cores": cores,
        "cpus": sorted(cpus) if cpus else None,
        "rounds": rounds,
        "tune_rounds": tune_rounds,
        "gap_ms": args.gap_ms,
        "torch_device": args.torch_device,
        "setup": args.setup_notes,
        "machine": {
            "cpu": machine.cpu(),
            "loadavg_start": load_start,
            "loadavg_end": machine.loadavg(),
            "others_cores_mean": (sum(o for o, _ in others) / sum(w for _, w in others)
                                  if others else None),
            "others_cores_max": max(per_row) if per_row else None,
        },
        "build": {"dir": args.build, "build_type": args.build_type,
                  "compiler": machine.compiler()},
        "versions": versions,
        "participants": part_json,
        "skipped": [{"key": r.key, "reason": "not run in --quick mode"} for r in skipped],
        "rows": [{
            "key": row.key, "title": row.title, "workload": row.workload, "arg": row.arg,
            "what": row.what, "unit": row.unit, "scale": row.scale, "flops": row.flops,
            "bytes": row.bytes, "batch": vars(row.full if mode == "full" else row.quick),
            "results": res,
            "ratios": {k: r["median_s"] / res["tessera"]["median_s"]
                       for k, r in res.items()
                       if k != "tessera" and r.get("status") == "ok" and
                       res["tessera"].get("status") == "ok"},
        } for row, res in results],
    }
    json_path = os.path.join(out_dir, f"{run_id}.json")
    tmp = json_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(run, f, indent=1)
        f.write("\n")
    os.replace(tmp, json_path)
    rc = finish(run, json_path, out_dir, docs_path, publish, root)
    errors = [(row["title"], k, r.get("reason")) for row in run["rows"]
              for k, r in row["results"].items() if r.get("status") == "error"]
    for title, k, reason in errors:
        log(f"bench: ERROR {k} {title}: {reason}")
    return 1 if errors else rc


def finish(run, json_path, out_dir, docs_path, publish, root):
    log("")
    log(report.terminal_table(run))
    m = run["machine"]
    log("")
    log(f"load average {m['loadavg_start']} at the start, {m['loadavg_end']} at the end; "
        + (f"other processes used {m['others_cores_mean']:.2f} cores on average while "
           f"batches ran" if m.get("others_cores_mean") is not None else ""))
    chart_path = os.path.join(out_dir, "ratios.png")
    why = report.chart(run, chart_path)
    log(f"chart: {chart_path}" if why is None else f"chart: not drawn: {why}")
    if publish:
        rel_json = os.path.relpath(json_path, os.path.dirname(docs_path))
        rel_chart = os.path.relpath(chart_path, os.path.dirname(docs_path))
        report.update_docs(docs_path, report.markdown(run, rel_json, rel_chart))
        log(f"docs: {docs_path} updated")
    else:
        md = os.path.join(out_dir, f"{run['run_id']}.md")
        with open(md, "w") as f:
            f.write(report.markdown(run, os.path.basename(json_path), "ratios.png") + "\n")
        log(f"table: {md} (docs/performance.md left alone)")
    log(f"json: {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
