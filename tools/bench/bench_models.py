#!/usr/bin/python3
"""The model benchmark: aotc against the CPU engines users pick today, from PyPI.

    /usr/bin/python3 tools/bench/bench_models.py [--build build] [--threads 2] [--repeats 5]
        [--models resnet18,resnet50,gpt2,gpt2-decode,mlp,bert] [--engines aotc,eager,...]
        [--batches 1,8] [--venv ~/.cache/aotc/bench-venv] [--markdown FILE]

Models, all with random weights (times do not depend on them): ResNet-18 and ResNet-50
(torchvision, 224x224) at batch 1 and 8; GPT-2 small at seq 128, batch 1 and 8, and its decode
step (one token after 127 cached positions, batch 1 and 8); the MLP of examples/mlp
(784-1024-1024-10) at batch 1 and 512; BERT-base (transformers' BertModel with its padding mask,
examples/bert/bert_base.cpp for aotc; seq 128, batch 1). The PyTorch modules are in torch_models.py
beside this file; its GPT-2 has the math of examples/gpt2 (Hugging Face's GPT2LMHeadModel with
scaled_dot_product_attention) and its cache as one tensor, so that every exporter takes the
decode step.

Engines: aotc (the artifact of build/tools/aotc/aotc, run by build/examples/run_model), aotc
bf16 (the same exported with --precision bf16: weights read by GEMMs in bf16), PyTorch
eager, torch.compile (inductor), torch.export + AOTInductor (aoti_compile_and_package, loaded
with aoti_load_package), ONNX Runtime (ORT_ENABLE_ALL) and OpenVINO at f32 and, where the CPU
has bf16, bf16 (INFERENCE_PRECISION_HINT), both on the .onnx of torch.onnx.export. aotc, the
AOTInductor package and the .onnx have a dynamic batch, exported once per model; torch.compile
specializes on each case's shapes. Every engine runs --threads threads.

Every sample is a fresh process that loads the model, warms up, times --iters calls and reports
their median; rounds are interleaved (one fresh process of every engine in turn, --repeats
times), so the shared machine's slow spells fall on every engine alike, and each cell is the
median [min-max] over the rounds, with aotc's median over the best fp32 peer's and aotc bf16's
over OpenVINO bf16's. Also measured:
the start-up (fresh process to first result; aotc's is a whole `run_model --iters 0` process per
round, random inputs included), the peak RSS of the timed process, the size on disk of what each
engine loads, and the export (compile) time of each.

The peers run in a virtual environment that this script makes on first use (python3 -m venv,
packages from PyPI, installed under nice); this script needs nothing outside the standard
library and runs one worker process of that environment's python (this file, --worker) per
sample."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = ("torch", "torchvision", "transformers", "onnxruntime", "openvino", "onnx",
            "onnxscript")

# The columns, in order; fp32 says which count as the best fp32 peer of the ratios.
ENGINES = {"aotc": "aotc", "aotc-bf16": "aotc bf16", "eager": "PyTorch eager", "compile": "torch.compile",
           "aoti": "AOTInductor", "ort": "ONNX Runtime", "ov-f32": "OpenVINO f32",
           "ov-bf16": "OpenVINO bf16"}
FP32_PEERS = ("eager", "compile", "aoti", "ort", "ov-f32")
TORCH_ENGINES = ("eager", "compile", "aoti")
# aotc's engines: the export flags each adds to the model's.
AOTC_ENGINES = {"aotc": (), "aotc-bf16": ("--precision", "bf16")}

# name: (label, aotc source and export flags or None, batches, warm-up calls, {batch: iters}).
# The iterations keep one timed process near a second on two cores of a recent x86 part; the
# processes' start-up (torch.compile's above all) takes most of a full run at --repeats 5, which
# took 48 minutes on two cores at a load average of 8 to 10.
MODELS = {
    "resnet18": ("ResNet-18", ("examples/resnet/resnet18.cpp", "--entry", "forward"), (1, 8), 2,
                 {1: 40, 8: 6}),
    "resnet50": ("ResNet-50", ("examples/resnet/resnet50.cpp", "--entry", "forward"), (1, 8), 2,
                 {1: 15, 8: 3}),
    "gpt2": ("GPT-2 small seq 128", ("examples/gpt2/gpt2.cpp", "--entry", "forward", "--dyn",
                                     "batch=1..8", "--dyn", "seq=1..128"), (1, 8), 2,
             {1: 8, 8: 3}),
    "gpt2-decode": ("GPT-2 small decode after 127", ("examples/gpt2/gpt2.cpp", "--entry",
                                                     "decode", "--dyn", "batch=1..8", "--dyn",
                                                     "past=1..255"), (1, 8), 2, {1: 20, 8: 6}),
    "mlp": ("MLP 784-1024-1024-10", ("examples/mlp/mlp.cpp", "--dyn", "batch=1..512"), (1, 512),
            20, {1: 1000, 512: 100}),
    "bert": ("BERT-base seq 128", ("examples/bert/bert_base.cpp", "--dyn", "batch=1..8", "--dyn",
                                   "seq=1..128"), (1,), 2, {1: 8}),
}
SEQ, PAST = 128, 127


def inputs(model, batch):
    """The case's inputs as {name: (shape, dtype)}, in the order of forward's arguments and of
    run_model's --input (token ids are drawn from [0, 10), as run_model draws them)."""
    if model.startswith("resnet"):
        return {"x": ((batch, 3, 224, 224), "float32")}
    if model == "mlp":
        return {"x": ((batch, 784), "float32")}
    if model == "gpt2-decode":
        return {"input_ids": ((batch, 1), "int64"),
                "past": ((12, 2, batch, 12, PAST, 64), "float32")}
    if model == "bert":
        return {"input_ids": ((batch, SEQ), "int64"), "attention_mask": ((batch, SEQ), "int64")}
    return {"input_ids": ((batch, SEQ), "int64")}


# ---------------------------------------------------------------------------------------------
# The driver: standard library only.


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def probe(build, threads):
    out = run([os.path.join(build, "tools", "bench", "aotc_probe"), str(threads)])
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def core_to_core(build):
    """The round trip (ns) of a cache line between the first two CPUs: where a VM's host put its
    vCPUs this moment (about 50 ns in one core complex, 300 across the machine)."""
    out = run([os.path.join(build, "tools", "bench", "aotc_probe"), "--core-to-core"])
    return float(out.split()[1])


def ensure_venv(venv):
    """The python of `venv`, made and filled from PyPI (under nice) where it lacks a package."""
    python = os.path.join(venv, "bin", "python")
    check = [python, "-c", "import " + ", ".join(PACKAGES)]
    if os.path.exists(python) and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    print(f"making the peers' virtual environment in {venv} (PyPI: {', '.join(PACKAGES)})",
          flush=True)
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run(["nice", "-n", "19", python, "-m", "pip", "install", "--progress-bar", "off",
                    *PACKAGES], check=True)
    subprocess.run(check, check=True)
    return python


def process(cmd, env=None):
    """Runs cmd to its end: (exit code, stdout, stderr, wall seconds, peak RSS in MiB)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.monotonic()
        child = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.monotonic() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return child.returncode, out.read(), err.read(), wall, usage.ru_maxrss / 1024


def reason(stderr):
    """The last line of a failed worker's stderr, short enough for a cell."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return (lines[-1] if lines else "failed")[:120]


class Worker:
    """Runs this file's worker jobs in the peers' python."""

    def __init__(self, python, tmp, threads):
        self.python, self.tmp, self.threads = python, tmp, threads
        self.env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONWARNINGS="ignore",
                        TORCHINDUCTOR_CACHE_DIR=os.path.join(tmp, "inductor-cache"),
                        TF_CPP_MIN_LOG_LEVEL="3")

    def __call__(self, job, **kw):
        """The job's JSON result with the process's wall time and peak RSS added, or a dict
        with `error`."""
        kw.update(job=job, tmp=self.tmp, threads=self.threads, spawned=time.monotonic())
        code, out, err, wall, rss = process(
            [self.python, os.path.abspath(__file__), "--worker", json.dumps(kw)], self.env)
        if code:
            return {"error": reason(err)}
        result = json.loads(out.strip().splitlines()[-1])
        result.update(wall=wall, rss=rss)
        return result


def sizes_mib(paths):
    return sum(os.path.getsize(p) for p in paths) / 2**20


def cell(values, digits):
    """median [min-max], or the reason the engine could not run."""
    if isinstance(values, str):
        return values
    if not values:
        return "n/a"
    med = statistics.median(values)
    if digits is None:  # three significant digits or more, as latencies span 0.1 ms to 10 s
        digits = 3 if med < 1 else 2 if med < 10 else 1
    if len(values) == 1:
        return f"{med:.{digits}f}"
    return f"{med:.{digits}f} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def ratio(row, engine, peers):
    """`engine`'s median over the best median of `peers`."""
    mine = row.get(engine)
    theirs = [statistics.median(row[e]) for e in peers
              if isinstance(row.get(e), list) and row[e]]
    if not isinstance(mine, list) or not mine or not theirs:
        return "n/a"
    return f"{statistics.median(mine) / min(theirs):.2f}"


# The ratio columns: (heading, engine, the peers it is held against).
RATIOS = (("aotc / best fp32 peer", "aotc", FP32_PEERS),
          ("aotc bf16 / OpenVINO bf16", "aotc-bf16", ("ov-bf16",)))


def markdown(title, engines, rows, digits, with_ratio=True):
    """One markdown table: a row per case, a column per engine (median [min-max])."""
    ratios = [r for r in RATIOS if r[1] in engines] if with_ratio else []
    head = ["model"] + [ENGINES[e] for e in engines] + [r[0] for r in ratios]
    lines = [f"### {title}", "", "| " + " | ".join(head) + " |",
             "|" + "|".join("---" for _ in head) + "|"]
    for label, row in rows:
        cells = [label] + [cell(row.get(e, "n/a"), digits) for e in engines]
        lines.append("| " + " | ".join(cells + [ratio(row, r[1], r[2]) for r in ratios]) + " |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--batches", help="only the cases of these batch sizes (e.g. 1,8)")
    p.add_argument("--venv", default=os.path.expanduser("~/.cache/aotc/bench-venv"))
    p.add_argument("--markdown", help="also write the tables to this file")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        return worker(json.loads(a.worker))
    models = a.models.split(",")
    engines = [e for e in ENGINES if e in a.engines.split(",")]
    unknown = set(models) - set(MODELS) | set(a.engines.split(",")) - set(ENGINES)
    if unknown:
        p.error(f"unknown models or engines: {', '.join(sorted(unknown))} (models: "
                f"{', '.join(MODELS)}; engines: {', '.join(ENGINES)})")
    aotc = os.path.join(a.build, "tools", "aotc", "aotc")
    run_model = os.path.join(a.build, "examples", "run_model", "run_model")
    python = ensure_venv(a.venv)

    limits = probe(a.build, a.threads)
    load = os.getloadavg()[0]
    header = (f"machine: {os.cpu_count()} CPUs, {a.threads} threads, load average {load:.1f} at "
              f"the start; FMA peak {limits['fma_peak_avx512_gflops']:.1f} GF/s (AVX-512), "
              f"{limits['fma_peak_avx2_gflops']:.1f} GF/s (AVX2), read bandwidth "
              f"{limits['read_bandwidth_gbs']:.1f} GB/s")
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="aotc-bench-") as tmp:
        work = Worker(python, tmp, a.threads)
        info = work("versions")
        if "error" in info:
            sys.exit(f"the peers' python cannot start: {info['error']}")
        header += "\npeers: " + ", ".join(f"{k} {v}" for k, v in info["versions"].items())
        header += f"\nCPU bf16 (OpenVINO's OPTIMIZATION_CAPABILITIES): {info['bf16']}"
        print(header, flush=True)

        times, starts, rss, files, exports, trips = [], [], [], [], [], []
        for model in models:
            label, source, batches, _, _ = MODELS[model]
            size_row, export_row, dead = {}, {}, {}
            if "ov-bf16" in engines and not info["bf16"]:
                dead["ov-bf16"] = "n/a (no bf16 on this CPU)"
            sos = {e: os.path.join(tmp, f"{model}.{e}.so") for e in AOTC_ENGINES}
            for e, flags in AOTC_ENGINES.items():
                if e not in engines:
                    continue
                if not source:
                    dead[e] = "n/a"
                    continue
                cmd = [aotc, "export", os.path.join(ROOT, source[0]), *source[1:], *flags, "-o",
                       sos[e]]
                print(f"[{model}] {ENGINES[e]} export", flush=True)
                code, _, err, wall, _ = process(cmd)
                if code:
                    dead[e] = f"n/a (export failed: {reason(err)})"
                else:
                    export_row[e], size_row[e] = [wall], [sizes_mib([sos[e]])]
            peers = [e for e in engines if e not in AOTC_ENGINES]
            if peers:
                print(f"[{model}] peers' exports ({', '.join(peers)})", flush=True)
                made = work("prepare", model=model, engines=peers)
                for e in peers:
                    got = made.get(e, made) if "error" not in made else made
                    if "error" in got:
                        dead[e] = f"n/a ({got['error']})"
                    elif "files" in got:
                        size_row[e] = [sizes_mib(got["files"])]
                        if e != "compile":
                            export_row[e] = [got["seconds"]] if got["seconds"] else "-"

            for batch in batches:
                if a.batches and str(batch) not in a.batches.split(","):
                    continue
                case = f"{label} b{batch}"
                row_ms, row_start, row_rss = {}, {}, {}
                alive = [e for e in engines if e not in dead]
                for e in engines:
                    if e in dead:
                        row_ms[e] = row_start[e] = row_rss[e] = dead[e]
                if "compile" in alive:
                    # A process of its own compiles the case into the inductor cache that the
                    # timed processes then load: its first call is torch.compile's compile time.
                    print(f"[{case}] torch.compile: compiling", flush=True)
                    got = work("sample", model=model, batch=batch, engine="compile", iters=1)
                    if "error" in got:
                        alive.remove("compile")
                        row_ms["compile"] = row_start["compile"] = row_rss["compile"] = \
                            f"n/a ({got['error']})"
                    else:
                        export_row.setdefault("compile", []).append(got["first_call_s"])
                for r in range(a.repeats):
                    trip = core_to_core(a.build)
                    trips.append(trip)
                    print(f"[{case} round {r + 1}/{a.repeats}] core-to-core round trip "
                          f"{trip:.0f} ns", flush=True)
                    for e in list(alive):
                        if e in AOTC_ENGINES:
                            got = aotc_sample(run_model, sos[e], model, batch, a.threads)
                        else:
                            got = work("sample", model=model, batch=batch, engine=e,
                                       iters=MODELS[model][4][batch])
                        if "error" in got:
                            alive.remove(e)
                            row_ms[e] = row_start[e] = row_rss[e] = f"n/a ({got['error']})"
                            print(f"[{case} round {r + 1}/{a.repeats}] {ENGINES[e]}: "
                                  f"{row_ms[e]}", flush=True)
                            continue
                        row_ms.setdefault(e, []).append(got["ms"])
                        row_start.setdefault(e, []).append(got["start_s"])
                        row_rss.setdefault(e, []).append(got["rss"])
                        print(f"[{case} round {r + 1}/{a.repeats}] {ENGINES[e]}: "
                              f"{got['ms']:.3f} ms, start-up {got['start_s']:.2f} s, "
                              f"peak RSS {got['rss']:.0f} MiB", flush=True)
                times.append((case, row_ms))
                starts.append((case, row_start))
                rss.append((case, row_rss))
            if "compile" in export_row:
                export_row["compile"] = [sum(export_row["compile"])]
            for e in engines:
                size_row.setdefault(e, dead.get(e, "n/a"))
                export_row.setdefault(e, dead.get(e, "n/a"))
            files.append((label, size_row))
            exports.append((label, export_row))

    if trips:
        header += (f"\ncore-to-core round trip {min(trips):.0f}-{max(trips):.0f} ns over the "
                   "rounds (where the host put the two vCPUs: about 50 ns in one core complex, "
                   "300 far apart, where two threads exchanging data run slower)")
    out = [header.replace("\n", "  \n") + "\n",
           markdown("Latency (ms, median [min-max] over fresh processes)", engines, times, None),
           markdown("Start-up (s, fresh process to first result)", engines, starts, 2),
           markdown("Peak RSS of the timed process (MiB)", engines, rss, 0),
           markdown("Size on disk of what the engine loads (MiB)", engines, files, 1, False),
           markdown("Export / compile time (s; torch.compile: the first calls of every case, "
                    "into an empty inductor cache; OpenVINO reads ONNX Runtime's .onnx)", engines,
                    exports, 1, False),
           f"load average {os.getloadavg()[0]:.1f} at the end (the machine is shared), "
           f"{(time.monotonic() - began) / 60:.0f} minutes in all; "
           "a ratio below 1: aotc is faster\n"]
    print()
    print("\n".join(out))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("\n".join(out))


def aotc_sample(run_model, so, model, batch, threads):
    """One round of aotc: a fresh run_model that times --iters calls, then one that loads the
    artifact and runs it once (--iters 0), which is the start-up."""
    spec = []
    for name, (shape, _) in inputs(model, batch).items():
        spec += ["--input", f"{name}={'x'.join(map(str, shape))}"]
    if model == "gpt2-decode":
        spec += ["--entry", "decode"]
    base = [run_model, so, *spec, "--threads", str(threads)]
    code, out, err, _, rss = process(base + ["--iters", str(MODELS[model][4][batch]),
                                             "--median-only"])
    if code:
        return {"error": reason(err)}
    code, _, err, wall, _ = process(base + ["--iters", "0"])
    if code:
        return {"error": reason(err)}
    return {"ms": float(out.split()[0]), "start_s": wall, "rss": rss}


# ---------------------------------------------------------------------------------------------
# The worker: runs in the peers' python; imports only what its engine needs, so that ONNX
# Runtime's and OpenVINO's start-up does not include importing torch.


def worker(job):
    kind = job["job"]
    if kind == "versions":
        import importlib.metadata as md
        import openvino as ov
        caps = ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
        versions = {name: md.version(name) for name in PACKAGES}
        print(json.dumps({"versions": versions, "bf16": "BF16" in caps}))
    elif kind == "prepare":
        print(json.dumps(prepare(job)))
    else:
        print(json.dumps(sample(job)))


def paths(job):
    base = os.path.join(job["tmp"], job["model"])
    return {"pt": base + ".pt", "pt2": base + ".pt2", "onnx": base + ".onnx"}


def arrays(model, batch):
    """The peers' inputs: token ids in [0, 10), an attention mask of ones (every token attends;
    run_model's mask for aotc is ids in [0, 10), every tenth key masked, the same work), floats
    from a normal distribution."""
    import numpy as np
    rng = np.random.default_rng(0)
    return [np.ones(shape, dtype=np.int64) if name == "attention_mask"
            else rng.integers(0, 10, shape, dtype=np.int64) if dtype == "int64"
            else rng.standard_normal(shape, dtype=np.float32)
            for name, (shape, dtype) in inputs(model, batch).items()]


def prepare(job):
    """What the peers load, from one module: the pickled module (eager, torch.compile), the
    AOTInductor package and the .onnx (ONNX Runtime, OpenVINO), each with a dynamic batch where
    the model has several; {engine: {"files", "seconds"} or {"error"}}."""
    import torch
    import torch_models
    torch.set_num_threads(job["threads"])
    model, engines, out = job["model"], job["engines"], {}
    batches = MODELS[model][2]
    module = torch_models.module(model)
    example = tuple(torch.from_numpy(x) for x in arrays(model, max(batches)))
    names = list(inputs(model, 1))
    dynamic = None
    if len(batches) > 1:
        batch = torch.export.Dim("batch", min=1, max=max(batches))
        dynamic = tuple({2 if n == "past" else 0: batch} for n in names)
    p = paths(job)
    if {"eager", "compile"} & set(engines):
        torch.save(module, p["pt"])
        for e in {"eager", "compile"} & set(engines):
            out[e] = {"files": [p["pt"]], "seconds": None}
    if "aoti" in engines:
        try:
            start = time.monotonic()
            with torch.no_grad():
                ep = torch.export.export(module, example, dynamic_shapes=dynamic)
                torch._inductor.aoti_compile_and_package(ep, package_path=p["pt2"])
            out["aoti"] = {"files": [p["pt2"]], "seconds": time.monotonic() - start}
        except Exception as e:  # noqa: BLE001 - any failure is the cell's reason
            out["aoti"] = {"error": f"export failed: {type(e).__name__}: {str(e)[:80]}"}
    onnx_engines = [e for e in engines if e in ("ort", "ov-f32", "ov-bf16")]
    if onnx_engines:
        got = export_onnx(torch, module, example, names, dynamic, p["onnx"])
        for e in onnx_engines:
            out[e] = got
    return out


def export_onnx(torch, module, example, names, dynamic, path):
    """torch.onnx.export with the dynamo exporter, or the TorchScript one where it fails."""
    errors = []
    for dynamo in (True, False):
        try:
            start = time.monotonic()
            with torch.no_grad():
                if dynamo:
                    torch.onnx.export(module, example, path, dynamo=True, opset_version=18,
                                      dynamic_shapes=dynamic, input_names=names)
                else:
                    axes = {n: list(d) for n, d in zip(names, dynamic)} if dynamic else None
                    torch.onnx.export(module, example, path, dynamo=False, opset_version=17,
                                      input_names=names, dynamic_axes=axes)
            seconds = time.monotonic() - start
            files = [path] + ([path + ".data"] if os.path.exists(path + ".data") else [])
            return {"files": files, "seconds": seconds}
        except Exception as e:  # noqa: BLE001 - try the other exporter, then give the reason
            errors.append(f"{'dynamo' if dynamo else 'legacy'}: {type(e).__name__}")
    return {"error": "onnx export failed (" + ", ".join(errors) + ")"}


def sample(job):
    """One fresh process of one engine: load, warm up, time `iters` calls; the median in ms,
    the start-up (process spawned to first result) and the first call's time."""
    model, batch, engine, threads = job["model"], job["batch"], job["engine"], job["threads"]
    p = paths(job)
    xs = arrays(model, batch)
    if engine in TORCH_ENGINES:
        import torch
        torch.set_num_threads(threads)
        torch.set_num_interop_threads(1)
        xs = [torch.from_numpy(x) for x in xs]
        grad = torch.no_grad()
        grad.__enter__()
        if engine == "aoti":
            call = torch._inductor.aoti_load_package(p["pt2"])
        else:
            import torch_models  # noqa: F401 - the classes of the pickled module
            call = torch.load(p["pt"], weights_only=False, mmap=True)
            if engine == "compile":
                call = torch.compile(call, dynamic=False)
        run_once = lambda: call(*xs)  # noqa: E731
    elif engine == "ort":
        import onnxruntime as ort
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        session = ort.InferenceSession(p["onnx"], opts, providers=["CPUExecutionProvider"])
        feed = {i.name: x for i, x in zip(session.get_inputs(), xs)}
        run_once = lambda: session.run(None, feed)  # noqa: E731
    else:
        import openvino as ov
        core = ov.Core()
        compiled = core.compile_model(core.read_model(p["onnx"]), "CPU", {
            "INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1, "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_PRECISION_HINT": "bf16" if engine == "ov-bf16" else "f32"})
        request = compiled.create_infer_request()
        feed = dict(enumerate(xs))
        run_once = lambda: request.infer(feed)  # noqa: E731
    start = time.monotonic()
    run_once()
    first = time.monotonic()
    for _ in range(MODELS[model][3] - 1):
        run_once()
    times = []
    for _ in range(job["iters"]):
        t = time.perf_counter()
        run_once()
        times.append((time.perf_counter() - t) * 1e3)
    return {"ms": statistics.median(times) if times else None,
            "start_s": first - job["spawned"], "first_call_s": first - start}


if __name__ == "__main__":
    sys.exit(main())
