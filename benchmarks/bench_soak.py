"""Soak (issue 22): `kplace run` and the real kube-scheduler, each on a fresh test control plane of 200 simulated
nodes, while this script creates and deletes 5,000 pods in bursts for a fixed duration.

    .venv/bin/python benchmarks/bench_soak.py                        # 10 minutes per scheduler, both
    .venv/bin/python benchmarks/bench_soak.py --duration 120 --pods 1000 --no-docs   # a short look
    .venv/bin/python benchmarks/bench_soak.py --schedulers kplace    # one scheduler only

Needs `make -C oracle` (oracle/bin/testcluster and oracle/bin/kube-scheduler). For each scheduler: `testcluster up
--nodes N` in a temporary directory (always brought `down`), the scheduler started as a subprocess (`kplace run
--scheduler-name soak`, or `kube-scheduler --config` with one profile for `soak`, leader election off, no serving
port), then the churn: bursts of bare pods (sizes drawn from a seeded generator, the same for both schedulers), each
burst followed, half a period later, by the deletion of a random part of the live pods (bound or not), so the live
count rises and falls. After the last burst the script waits up to `--grace` seconds for every live pod to be bound.

Measured per scheduler, all in this process: bind latency per pod (from the create call's return to the first
watch event showing `spec.nodeName`; p50, p99, max), pods left pending or never bound, nodes whose bound requests
exceed allocatable, the scheduler's RSS every `--sample` seconds from /proc (start after warm-up, median, end, and
the least-squares slope after warm-up), its CPU seconds, and pods/s per burst (pods bound ÷ time from the burst's
first create to its last bind). Results go to benchmarks/results/soak.json and, unless --no-docs, to the "Soak"
section of docs/benchmarks.md (between its markers) with docs/img/soak.png (RSS over time, latency CDF).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import machine, replace_section, save_figure, write_json

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
IMG = ROOT / "docs" / "img" / "soak.png"
RESULTS = ROOT / "benchmarks" / "results" / "soak.json"
BEGIN, END = "<!-- BEGIN soak (benchmarks/bench_soak.py) -->", "<!-- END soak -->"
TESTCLUSTER = ROOT / "oracle" / "bin" / "testcluster"
KUBE_SCHEDULER = ROOT / "oracle" / "bin" / "kube-scheduler"
NAMESPACE = "soak"
SCHEDULER_NAME = "soak"
CPU = ["100m", "250m", "500m", "1"]  # requests drawn per pod; 200 nodes of 16 CPU hold every live set here
MEMORY = ["128Mi", "256Mi", "512Mi", "1Gi"]
WARMUP = 0.2  # the first fifth of the churn is warm-up for the RSS trend


class SoakError(RuntimeError):
    pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _cpu_seconds(pid: int) -> float | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def plan_churn(pods: int, duration: float, burst: int, seed: int) -> list[dict]:
    """The bursts: at `at` seconds create `create` pods (their sizes), then at `delete_at` delete `delete_fraction`
    of the live pods. Bursts are spread evenly over the first 90 % of the duration."""
    rng = random.Random(seed)
    sizes = []
    left = pods
    while left > 0:
        n = min(left, rng.randint(burst // 2, burst * 3 // 2))
        sizes.append(n)
        left -= n
    period = duration * 0.9 / len(sizes)
    out = []
    for i, n in enumerate(sizes):
        out.append({"at": round(i * period, 3), "delete_at": round((i + 0.5) * period, 3),
                    "delete_fraction": 0.0 if i == len(sizes) - 1 else round(rng.uniform(0.3, 0.7), 3),
                    "pods": [(rng.choice(CPU), rng.choice(MEMORY)) for _ in range(n)]})
    return out


def _pod(name: str, burst: int, cpu: str, memory: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "soak", "burst": str(burst)}},
            "spec": {"schedulerName": SCHEDULER_NAME, "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}


class Watch(threading.Thread):
    """Pods of the namespace, watched from the start: the first time each is seen bound, and its deletion."""

    def __init__(self, client, rv: str, stop: threading.Event) -> None:
        super().__init__(name="soak-watch", daemon=True)
        self.client, self.rv, self.stop = client, rv, stop
        self.bound: dict[str, float] = {}
        self.node: dict[str, str] = {}
        self.gone: set[str] = set()
        self.error: str | None = None
        self.lock = threading.Lock()

    def run(self) -> None:
        from kubernetes import client as k

        core = k.CoreV1Api(self.client)
        while not self.stop.is_set():
            try:
                resp = core.list_namespaced_pod(NAMESPACE, watch=True, resource_version=self.rv,
                                                allow_watch_bookmarks=True, timeout_seconds=60,
                                                _preload_content=False, _request_timeout=(10, 90))
            except Exception as exc:
                self.error = f"watch: {exc}"
                return
            try:
                for line in resp:
                    now = time.monotonic()
                    if not line.strip():
                        continue
                    ev = json.loads(line)
                    typ, obj = ev.get("type"), ev.get("object") or {}
                    if typ == "ERROR":
                        self.error = f"watch ERROR event: {obj.get('message')}"
                        return
                    meta = obj.get("metadata") or {}
                    self.rv = meta.get("resourceVersion") or self.rv
                    name, node = meta.get("name"), (obj.get("spec") or {}).get("nodeName")
                    with self.lock:
                        if node and name not in self.bound:
                            self.bound[name], self.node[name] = now, node
                        if typ == "DELETED":
                            self.gone.add(name)
                    if self.stop.is_set():
                        return
            except Exception as exc:  # the stream broke: an error unless the cluster is going down
                if not self.stop.is_set():
                    self.error = f"watch stream: {exc}"
                return
            finally:
                resp.release_conn()


def start_scheduler(which: str, kubeconfig: Path, work: Path, args) -> tuple[subprocess.Popen, list[str], Path]:
    log_path = work / f"{which}.log"
    if which == "kplace":
        cmd = [sys.executable, "-m", "kplace.solver.cli", "run", "--kubeconfig", str(kubeconfig),
               "--scheduler-name", SCHEDULER_NAME, "--port", str(_free_port()), "--bind-address", "127.0.0.1",
               "--engine", args.engine, *args.kplace_arg]
    else:
        config = work / "kube-scheduler.yaml"
        config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                          f"clientConnection: {{kubeconfig: {kubeconfig}}}\nleaderElection: {{leaderElect: false}}\n"
                          f"profiles: [{{schedulerName: {SCHEDULER_NAME}}}]\n")
        cmd = [str(KUBE_SCHEDULER), "--config", str(config), "--secure-port", "0"]
    log = log_path.open("w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    shown = [c.replace(str(ROOT) + "/", "").replace(str(work), "DIR") for c in cmd]
    shown[0] = "kplace" if which == "kplace" else shown[0]
    if which == "kplace":
        shown = ["kplace", *shown[3:]]
    return proc, shown, log_path


def stop_scheduler(proc: subprocess.Popen) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def _tail(path: Path, n: int = 15) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()[-n:]
    except OSError:
        return []


def soak(which: str, churn: list[dict], args) -> dict:
    """One scheduler's run on a fresh cluster; the cluster is always brought down."""
    from kplace.solver.binder.kube import new_client
    from kubernetes import client as k

    work = Path(tempfile.mkdtemp(prefix=f"soak-{which}-"))
    started = time.monotonic()
    up = subprocess.run([str(TESTCLUSTER), "up", "--dir", str(work), "--nodes", str(args.nodes)],
                        capture_output=True, text=True, timeout=400)
    if up.returncode != 0:
        raise SoakError(f"testcluster up failed:\n{up.stderr.strip()[-3000:]}")
    proc = None
    try:
        kubeconfig = work / "kubeconfig"
        print(f"[{which}] cluster of {args.nodes} nodes up in {time.monotonic() - started:.0f} s", file=sys.stderr)
        api = new_client(str(kubeconfig), pool=args.threads + 4)
        core = k.CoreV1Api(api)
        core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        while not any(sa.metadata.name == "default"
                      for sa in core.list_namespaced_service_account(NAMESPACE, _request_timeout=30).items):
            time.sleep(0.2)
        rv = core.list_namespaced_pod(NAMESPACE, _request_timeout=30).metadata.resource_version
        stop = threading.Event()
        watch = Watch(api, rv, stop)
        watch.start()
        proc, command, log_path = start_scheduler(which, kubeconfig, work, args)
        pid = proc.pid
        rss: list[tuple[float, float]] = []
        created: dict[str, float] = {}
        deleted: dict[str, float] = {}
        burst_of: dict[str, int] = {}
        errors: list[str] = []
        time.sleep(args.settle)  # the scheduler lists and syncs before the first pod
        if proc.poll() is not None:
            raise SoakError(f"{which} exited at start ({proc.returncode}):\n" + "\n".join(_tail(log_path)))
        cpu0 = _cpu_seconds(pid) or 0.0
        t0 = time.monotonic()

        def sampler() -> None:
            while not stop.is_set() and proc.poll() is None:
                value = _rss_mib(pid)
                if value is not None:
                    rss.append((round(time.monotonic() - t0, 2), round(value, 1)))
                stop.wait(args.sample)

        threading.Thread(target=sampler, name="soak-rss", daemon=True).start()

        def create(name: str, burst: int, cpu: str, memory: str) -> None:
            try:
                resp = core.create_namespaced_pod(NAMESPACE, _pod(name, burst, cpu, memory), _preload_content=False,
                                                  _request_timeout=30)
                resp.read()  # drained: a connection given back with bytes unread breaks the next call on it
                resp.release_conn()
                created[name] = time.monotonic()
                burst_of[name] = burst
            except Exception as exc:
                errors.append(f"create {name}: {str(exc)[:200]}")

        def delete(name: str) -> None:
            try:
                resp = core.delete_namespaced_pod(name, NAMESPACE, _preload_content=False, _request_timeout=30)
                resp.read()
                resp.release_conn()
                deleted[name] = time.monotonic()
            except Exception as exc:
                errors.append(f"delete {name}: {str(exc)[:200]}")

        rng = random.Random(args.seed + 1)
        events = sorted([(b["at"], 0, i) for i, b in enumerate(churn)] +
                        [(b["delete_at"], 1, i) for i, b in enumerate(churn) if b["delete_fraction"]])
        last_line = 0.0
        with ThreadPoolExecutor(args.threads) as pool:
            for at, kind, i in events:
                while (now := time.monotonic() - t0) < at:
                    if now - last_line >= args.progress:
                        last_line = now
                        _progress(which, now, args.duration, created, deleted, watch, rss)
                    if proc.poll() is not None:
                        raise SoakError(f"{which} exited during the churn ({proc.returncode}):\n"
                                        + "\n".join(_tail(log_path)))
                    time.sleep(min(0.2, at - now))
                if kind == 0:
                    names = [f"b{i:03d}-{j:04d}" for j in range(len(churn[i]["pods"]))]
                    list(pool.map(lambda a: create(*a), [(n, i, c, m) for n, (c, m) in
                                                          zip(names, churn[i]["pods"], strict=True)]))
                else:
                    live = sorted(set(created) - set(deleted))
                    victims = rng.sample(live, round(len(live) * churn[i]["delete_fraction"]))
                    list(pool.map(delete, victims))
            churn_end = time.monotonic()
            # the rest of the duration, then the grace period: every live pod must end bound
            deadline = t0 + max(args.duration, churn_end - t0) + args.grace
            while time.monotonic() < deadline:
                now = time.monotonic() - t0
                if now - last_line >= args.progress:
                    last_line = now
                    _progress(which, now, args.duration, created, deleted, watch, rss)
                if proc.poll() is not None:
                    raise SoakError(f"{which} exited ({proc.returncode}):\n" + "\n".join(_tail(log_path)))
                if time.monotonic() - t0 >= args.duration:
                    with watch.lock:
                        waiting = [n for n in created if n not in deleted and n not in watch.bound]
                    if not waiting:
                        break
                time.sleep(0.5)
        elapsed = time.monotonic() - t0
        cpu = (_cpu_seconds(pid) or cpu0) - cpu0
        final = json.loads(core.list_namespaced_pod(NAMESPACE, _preload_content=False, _request_timeout=60).data)
        nodes = json.loads(core.list_node(_preload_content=False, _request_timeout=60).data)
        code = stop_scheduler(proc)
        stop.set()
        if watch.error:
            errors.append(watch.error)
        return _figures(which, command, churn, created, deleted, burst_of, watch, rss, final, nodes, elapsed, cpu,
                        code, errors, _tail(log_path, 5), args)
    finally:
        if proc is not None:
            stop_scheduler(proc)
        down = subprocess.run([str(TESTCLUSTER), "down", "--dir", str(work)], capture_output=True, text=True,
                              timeout=180)
        if down.returncode != 0:
            print(f"[{which}] testcluster down failed: {down.stderr.strip()}", file=sys.stderr)


def _progress(which, now, duration, created, deleted, watch, rss) -> None:
    with watch.lock:
        bound = sum(1 for n in created if n in watch.bound)
        pending = sum(1 for n in created if n not in deleted and n not in watch.bound)
        lat = sorted(watch.bound[n] - created[n] for n in created if n in watch.bound)
    p99 = f"{lat[min(len(lat) - 1, int(0.99 * len(lat)))]:.2f}" if lat else "-"
    mem = f"{rss[-1][1]:.0f} MiB" if rss else "-"
    print(f"[{which}] {now:5.0f}/{duration:.0f} s  created {len(created)}  deleted {len(deleted)}  bound {bound}  "
          f"pending {pending}  p99 {p99} s  RSS {mem}", file=sys.stderr, flush=True)


def _quantile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def _slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (t seconds, MiB), in MiB per minute."""
    if len(points) < 3:
        return float("nan")
    ts, ys = [p[0] for p in points], [p[1] for p in points]
    mt, my = statistics.fmean(ts), statistics.fmean(ys)
    var = sum((t - mt) ** 2 for t in ts)
    return 60 * sum((t - mt) * (y - my) for t, y in zip(ts, ys, strict=True)) / var if var else float("nan")


def _figures(which, command, churn, created, deleted, burst_of, watch, rss, final, nodes, elapsed, cpu, code,
             errors, log_tail, args) -> dict:
    from kplace.models.quantity import parse_quantity

    with watch.lock:
        bound, where = dict(watch.bound), dict(watch.node)
    latencies = {n: max(0.0, bound[n] - created[n]) for n in created if n in bound}
    live_final = {p["metadata"]["name"]: p for p in final["items"] if not p["metadata"].get("deletionTimestamp")}
    kept = [n for n in created if n not in deleted]
    pending_end = sorted(n for n in kept if not (live_final.get(n, {}).get("spec") or {}).get("nodeName"))
    lost = sorted(n for n in kept if n not in live_final)  # not deleted by us, yet gone
    never_bound = sorted(n for n in kept if n not in bound)
    deleted_pending = sum(1 for n in deleted if n not in bound or bound[n] > deleted[n])
    moved = sorted(n for n, p in live_final.items() if n in where and p["spec"].get("nodeName") != where[n])
    # capacity: each node's bound requests within allocatable (cpu, memory, pods)
    alloc = {n["metadata"]["name"]: n["status"].get("allocatable", {}) for n in nodes["items"]}
    used: dict[str, list[float]] = {}
    for p in final["items"]:
        node = p["spec"].get("nodeName")
        if not node:
            continue
        req = [sum(parse_quantity(c.get("resources", {}).get("requests", {}).get(r, "0"))
                   for c in p["spec"]["containers"]) for r in ("cpu", "memory")]
        u = used.setdefault(node, [0.0, 0.0, 0])
        u[0], u[1], u[2] = u[0] + req[0], u[1] + req[1], u[2] + 1
    overfull = sorted(n for n, (c, m, k) in used.items()
                      if c > parse_quantity(alloc[n].get("cpu", "0")) or m > parse_quantity(alloc[n].get("memory", "0"))
                      or k > int(alloc[n].get("pods", "0")))
    per_burst = []
    for i in range(len(churn)):
        names = [n for n, b in burst_of.items() if b == i and n in latencies]
        if len(names) >= 2:
            first = min(created[n] for n in names)
            last = max(bound[n] for n in names)
            per_burst.append(len(names) / max(last - first, 1e-3))
    warm = [p for p in rss if p[0] >= WARMUP * args.duration]
    lat = list(latencies.values())
    return {
        "scheduler": which, "command": " ".join(command), "exit_code": code, "seconds": round(elapsed, 1),
        "created": len(created), "deleted": len(deleted), "deleted_before_bound": deleted_pending,
        "bound": len(latencies), "pending_at_end": len(pending_end), "never_bound": len(never_bound),
        "lost": len(lost), "rebound": len(moved), "overfull_nodes": len(overfull),
        "examples": {"pending": pending_end[:10], "lost": lost[:10], "overfull": overfull[:10]},
        "latency_s": {"p50": _quantile(lat, 0.5), "p90": _quantile(lat, 0.9), "p99": _quantile(lat, 0.99),
                      "max": max(lat, default=float("nan")), "mean": statistics.fmean(lat) if lat else float("nan")},
        "burst_pods_per_s": {"median": statistics.median(per_burst) if per_burst else float("nan"),
                             "min": min(per_burst, default=float("nan"))},
        "rss_mib": {"start": warm[0][1] if warm else float("nan"),
                    "median": statistics.median(p[1] for p in warm) if warm else float("nan"),
                    "end": warm[-1][1] if warm else float("nan"), "max": max((p[1] for p in rss), default=0),
                    "slope_mib_per_min": _slope(warm), "warmup_s": WARMUP * args.duration},
        "cpu_seconds": round(cpu, 1), "errors": errors[:20], "error_count": len(errors), "log_tail": log_tail,
        "rss": rss, "latencies": sorted(round(v, 4) for v in lat),
    }


def render(results: list[dict], args, elapsed: float, runs: int) -> str:
    cmd = " ".join(["`.venv/bin/python benchmarks/bench_soak.py", *_argv(), "`"]).replace(" `", "`")
    lines = [BEGIN, f"Command: {cmd} ({machine()}; {elapsed / 60:.0f} min in all). Each scheduler on a fresh "
             f"`testcluster` of {args.nodes} simulated nodes (16 CPU, 64 Gi, 110 pods each), one after the other; "
             f"{args.pods:,} bare pods created in {results[0]['bursts']} bursts over {args.duration:g} s and a random "
             "30–70 % of the live pods deleted half a period after each burst (the same bursts for both), then up to "
             f"{args.grace:g} s for the last pods. Latency: the create call's return to the first watch event with "
             "`spec.nodeName`, both seen by the benchmark; pods/s per burst: the burst's pods ÷ (last bind − first "
             "create), median over bursts; RSS of the scheduler process after a warm-up of the first "
             f"{WARMUP:.0%}, slope by least squares. The scheduler, the control plane and this script share the "
             "machine's 2 cores.", "",
             "| scheduler | run | pods created / deleted | bound | pending at end / lost / over-full nodes | "
             "latency p50 / p99 / max s | pods/s per burst (median) | RSS start / median / end MiB | "
             "RSS slope MiB/min | CPU s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lat, mem = r["latency_s"], r["rss_mib"]
        lines.append(f"| {r['scheduler']} | {r['run']} | {r['created']:,} / {r['deleted']:,} | {r['bound']:,} | "
                     f"{r['pending_at_end']} / {r['lost']} / {r['overfull_nodes']} | {lat['p50']:.2f} / "
                     f"{lat['p99']:.2f} / {lat['max']:.2f} | {r['burst_pods_per_s']['median']:.0f} | "
                     f"{mem['start']:.0f} / {mem['median']:.0f} / {mem['end']:.0f} | "
                     f"{mem['slope_mib_per_min']:+.2f} | {r['cpu_seconds']:.0f} |")
    ratios = _ratios(results)
    if ratios:
        lines += ["", "Ratios, kplace ÷ kube-scheduler, same run: " + "; ".join(ratios) + "."]
    lines += ["", f"![RSS over time and bind latency CDF]({IMG.relative_to(DOC.parent).as_posix()})", "",
              "Commands as run (DIR: the cluster's temporary directory): "
              + "; ".join(f"`{c}`" for c in dict.fromkeys(r["command"] for r in results)) + ".", END]
    return "\n".join(lines)


def _ratios(results: list[dict]) -> list[str]:
    out = []
    for run in sorted({r["run"] for r in results}):
        by = {r["scheduler"]: r for r in results if r["run"] == run}
        if {"kplace", "kube-scheduler"} <= set(by):
            a, b = by["kplace"], by["kube-scheduler"]
            out.append(f"run {run}: latency p50 {a['latency_s']['p50'] / b['latency_s']['p50']:.2f}×, p99 "
                       f"{a['latency_s']['p99'] / b['latency_s']['p99']:.2f}×, pods/s per burst "
                       f"{a['burst_pods_per_s']['median'] / b['burst_pods_per_s']['median']:.2f}×, median RSS "
                       f"{a['rss_mib']['median'] / b['rss_mib']['median']:.2f}×, CPU "
                       f"{a['cpu_seconds'] / max(b['cpu_seconds'], 0.1):.2f}×")
    return out


def _argv() -> list[str]:
    return [a for a in sys.argv[1:]]


def plot(results: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6))
    for r in results:
        label = f"{r['scheduler']} (run {r['run']})"
        a.plot([p[0] for p in r["rss"]], [p[1] for p in r["rss"]], label=label)
        lat = r["latencies"]
        b.step(lat, [(i + 1) / len(lat) for i in range(len(lat))], where="post", label=label)
    a.set_xlabel("seconds since the first burst")
    a.set_ylabel("scheduler RSS (MiB)")
    a.set_ylim(bottom=0)
    a.legend(fontsize=8)
    b.set_xscale("log")
    b.set_xlabel("bind latency (s)")
    b.set_ylabel("fraction of pods")
    b.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, IMG)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=600.0, help="seconds of churn per scheduler (default 600)")
    ap.add_argument("--pods", type=int, default=5000, help="pods created per scheduler (default 5000)")
    ap.add_argument("--nodes", type=int, default=200, help="simulated nodes (default 200)")
    ap.add_argument("--burst", type=int, default=250, help="mean pods per burst (default 250)")
    ap.add_argument("--grace", type=float, default=120.0, help="seconds allowed after the churn for the last pods")
    ap.add_argument("--schedulers", default="kplace,kube-scheduler", help="comma-separated: kplace, kube-scheduler")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each scheduler, alternating (default 1)")
    ap.add_argument("--engine", default="cpsat", choices=["cpsat", "greedy"], help="kplace run's engine")
    ap.add_argument("--kplace-arg", action="append", default=[], help="an extra argument for kplace run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=8, help="concurrent create/delete calls")
    ap.add_argument("--sample", type=float, default=2.0, help="seconds between RSS samples")
    ap.add_argument("--settle", type=float, default=10.0, help="seconds the scheduler gets to sync first")
    ap.add_argument("--progress", type=float, default=15.0, help="seconds between progress lines")
    ap.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md")
    ap.add_argument("--output", type=Path, default=RESULTS, help="results JSON (default benchmarks/results/soak.json)")
    ap.add_argument("--render", type=Path, default=None, help="only rewrite the docs section from this results JSON")
    args = ap.parse_args()
    if args.render is not None:
        saved = json.loads(args.render.read_text())
        global _argv  # the command shown is the one that produced the results
        _argv = lambda: saved["argv"]  # noqa: E731
        replace_section(DOC, BEGIN, END, render(saved["results"], argparse.Namespace(**saved["args"]),
                                                saved["seconds"], saved["args"]["repeat"]),
                        heading="## Soak: kplace run and kube-scheduler under churn (issue 22)")
        plot(saved["results"])
        return 0
    which = [s.strip() for s in args.schedulers.split(",") if s.strip()]
    unknown = set(which) - {"kplace", "kube-scheduler"}
    if unknown or not which:
        print(f"--schedulers: unknown {', '.join(sorted(unknown)) or '(none given)'}", file=sys.stderr)
        return 2
    for binary in [TESTCLUSTER] + ([KUBE_SCHEDULER] if "kube-scheduler" in which else []):
        if not binary.exists():
            print(f"{binary.relative_to(ROOT)} is missing: run `make -C oracle` first", file=sys.stderr)
            return 2
    churn = plan_churn(args.pods, args.duration, args.burst, args.seed)
    started = time.monotonic()
    results = []
    try:
        for run in range(1, args.repeat + 1):
            for name in which:
                r = soak(name, churn, args)
                r["run"], r["bursts"] = run, len(churn)
                print(f"[{name}] run {run}: " + json.dumps({k: r[k] for k in (
                    "bound", "pending_at_end", "lost", "overfull_nodes", "latency_s", "burst_pods_per_s",
                    "rss_mib", "cpu_seconds", "error_count", "exit_code")}), file=sys.stderr)
                results.append(r)
    except SoakError as exc:
        print(f"soak: {exc}", file=sys.stderr)
        return 1
    finally:
        if results:
            write_json(args.output, {"machine": machine(), "argv": sys.argv[1:], "seconds": time.monotonic() - started,
                                     "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                                     "churn": [{k: b[k] for k in ("at", "delete_at", "delete_fraction")} |
                                               {"pods": len(b["pods"])} for b in churn], "results": results})
    if not args.no_docs:
        replace_section(DOC, BEGIN, END, render(results, args, time.monotonic() - started, args.repeat),
                        heading="## Soak: kplace run and kube-scheduler under churn (issue 22)")
        plot(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
