#!/usr/bin/python3
"""The model benchmark: ResNet-18 and ResNet-50 (examples/resnet) at 224x224, batch 1 and 8, and
GPT-2 small (examples/gpt2) at seq 128, batch 1 and 8, and its decode step (one token after 127
cached positions, batch 1 and 8), aotc (through examples/run_model) against PyTorch eager and
TorchScript (trace + freeze + optimize_for_inference), as medians of interleaved rounds (one
fresh aotc process, then eager, then TorchScript, --repeats times); then export times and
start-up: a fresh process that loads the ResNet-50 artifact and runs it once, against a fresh
Python process that imports torch, loads the saved TorchScript module and runs it. The PyTorch
GPT-2 is written here with the same math as Hugging Face's GPT2LMHeadModel (transformers is not
a Debian package); torch 1.13 has no fused attention.

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 \\
        tools/bench/bench_models.py [--build build] [--threads 2] [--repeats 5]

Needs Debian's python3-torch and python3-torchvision. Weights are random (aotc's defaults and
torchvision's); times do not depend on them."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torchvision

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = {"ResNet-18": ("resnet18", torchvision.models.resnet18),
          "ResNet-50": ("resnet50", torchvision.models.resnet50)}
BATCHES = (1, 8)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def probe(build, threads):
    out = run([os.path.join(build, "tools", "bench", "aotc_probe"), str(threads)])
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def flops(module, x):
    """Multiply-adds of the convolutions and linear layers, times 2, for input x."""
    total = [0]

    def conv(m, _, out):
        k = m.kernel_size[0] * m.kernel_size[1] * m.in_channels // m.groups
        total[0] += 2 * out.numel() * k

    def linear(m, _, out):
        total[0] += 2 * out.numel() * m.in_features

    hooks = [m.register_forward_hook(conv if isinstance(m, torch.nn.Conv2d) else linear)
             for m in module.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    with torch.no_grad():
        module(x)
    for h in hooks:
        h.remove()
    return total[0]


def aotc_ms(run_model, so, batch, threads, iters, input_spec=None, extra=()):
    """run_model's median over `iters` calls in one fresh process, in ms."""
    cmd = [run_model, so, "--input", input_spec or f"x={batch}x3x224x224", *extra, "--threads",
           str(threads), "--iters", str(iters), "--median-only"]
    return float(run(cmd).split()[0])


def torch_ms(fn, x, iters):
    """The median over `iters` calls of fn(x), in ms (warmed up by the caller)."""
    with torch.no_grad():
        times = []
        for _ in range(iters):
            start = time.perf_counter()
            fn(x)
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def warm(fn, x):
    """Two calls: TorchScript's profiling executor optimizes on the second."""
    with torch.no_grad():
        fn(x)
        fn(x)
    return fn


def interleaved(measures, repeats):
    """Medians over `repeats` rounds that each take one sample of every measure in turn: the
    shared machine's slow spells fall on every side alike, not on whichever ran then."""
    samples = [[] for _ in measures]
    for _ in range(repeats):
        for got, measure in zip(samples, measures):
            got.append(measure())
    return [statistics.median(got) for got in samples]


def wall_s(cmd, repeats, env=None):
    """Median wall time of a whole process, in s."""
    times = []
    for _ in range(repeats):
        start = time.monotonic()
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env=env)
        if done.returncode:
            sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr}")
        times.append(time.monotonic() - start)
    return statistics.median(times)


class GPT2(torch.nn.Module):
    """GPT-2 small as Hugging Face computes it: learned positions, pre-norm blocks, causal
    attention, gelu (tanh), tied output embedding."""

    def __init__(self, layers=12, embd=768, heads=12, vocab=50257, positions=1024):
        super().__init__()
        self.heads = heads
        self.wte = torch.nn.Embedding(vocab, embd)
        self.wpe = torch.nn.Embedding(positions, embd)
        self.blocks = torch.nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(torch.nn.ModuleDict({
                "ln_1": torch.nn.LayerNorm(embd), "c_attn": torch.nn.Linear(embd, 3 * embd),
                "c_proj": torch.nn.Linear(embd, embd), "ln_2": torch.nn.LayerNorm(embd),
                "c_fc": torch.nn.Linear(embd, 4 * embd), "mlp_proj": torch.nn.Linear(4 * embd, embd)}))
        self.ln_f = torch.nn.LayerNorm(embd)

    def forward(self, ids):
        return self.run(ids, None)[0]

    def decode(self, ids, past):
        """One token per sequence after the cached positions `past` ([layers, 2, batch, heads,
        past, head_dim], transformers' past_key_values stacked): logits and the grown cache."""
        return self.run(ids, past)

    def run(self, ids, past):
        b, t = ids.shape
        start = 0 if past is None else past.shape[4]
        h = self.wte(ids) + self.wpe(torch.arange(start, start + t).unsqueeze(0))
        mask = torch.full((t, t), float("-inf")).triu(1) if past is None else 0.0
        present = []
        for i, blk in enumerate(self.blocks):
            q, k, v = blk["c_attn"](blk["ln_1"](h)).split(h.shape[-1], dim=-1)
            q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
            if past is not None:
                k, v = torch.cat([past[i, 0], k], 2), torch.cat([past[i, 1], v], 2)
                present.append(torch.stack([k, v]))
            att = torch.softmax(q @ k.transpose(-1, -2) / (q.shape[-1] ** 0.5) + mask, dim=-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, -1)
            h = h + blk["c_proj"](y)
            h = h + blk["mlp_proj"](torch.nn.functional.gelu(blk["c_fc"](blk["ln_2"](h)),
                                                             approximate="tanh"))
        logits = self.ln_f(h) @ self.wte.weight.t()
        return logits, (torch.stack(present) if present else None)


class GPT2Decode(torch.nn.Module):
    """GPT2.decode as a module's forward, for torch.jit.trace."""

    def __init__(self, gpt2):
        super().__init__()
        self.gpt2 = gpt2

    def forward(self, ids, past):
        return self.gpt2.decode(ids, past)


def torchscript(module, example):
    """TorchScript's inference mode: trace, freeze, optimize_for_inference."""
    with torch.no_grad():
        return torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(module, example)))


def measured(rows, case, ms, throughput, eager, scripted, digits=1):
    """Appends a row of the table (times with `digits` decimals) and prints it at once."""
    rows.append([case, f"{ms:.{digits}f} ms", throughput, f"{eager:.{digits}f} ms",
                 f"{scripted:.{digits}f} ms", f"{min(eager, scripted) / ms:.2f}x"])
    print("measured:", " | ".join(rows[-1]), flush=True)


def exported(export_rows, label, seconds, so):
    export_rows.append([label, f"{seconds:.1f} s", f"{os.path.getsize(so) / 2**20:.1f} MiB"])


def gpt2_flops(batch, seq, layers=12, embd=768, vocab=50257):
    per_token = layers * (2 * 12 * embd * embd + 2 * 2 * seq * embd) + 2 * embd * vocab
    return batch * seq * per_token


def table(header, rows):
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    print(" | ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(str(c).ljust(w) for c, w in zip(r, widths)))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    aotc = os.path.join(a.build, "tools", "aotc", "aotc")
    run_model = os.path.join(a.build, "examples", "run_model", "run_model")
    torch.set_num_threads(a.threads)

    limits = probe(a.build, a.threads)
    # The higher of the two: a busy moment during one probe must not halve the peak (on parts
    # that double-pump AVX-512 both are the same).
    peak = max(limits["fma_peak_avx512_gflops"], limits["fma_peak_avx2_gflops"])
    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} CPUs, {a.threads} threads, load average {load:.1f} at "
          f"the start; FMA peak {limits['fma_peak_avx512_gflops']:.1f} GF/s (AVX-512), "
          f"{limits['fma_peak_avx2_gflops']:.1f} "
          f"GF/s (AVX2), read bandwidth {limits['read_bandwidth_gbs']:.1f} GB/s; torch "
          f"{torch.__version__}, torchvision {torchvision.__version__}")

    rows, export_rows = [], []
    with tempfile.TemporaryDirectory() as tmp:
        sos = {}
        for name, (stem, make) in MODELS.items():
            so = os.path.join(tmp, stem + ".so")
            cmd = [aotc, "export", os.path.join(ROOT, "examples", "resnet", stem + ".cpp"),
                   "--entry", "forward", "-o", so]
            seconds = wall_s(cmd, 1)
            sos[name] = so
            exported(export_rows, f"export {name} (--entry forward, batch 1..64)", seconds, so)

        for name, (stem, make) in MODELS.items():
            module = make().eval()
            for batch in BATCHES:
                x = torch.randn(batch, 3, 224, 224)
                work = flops(module, x)
                iters = max(3, 24 // batch) if stem == "resnet18" else max(3, 12 // batch)
                script = warm(torchscript(module, x), x)
                warm(module, x)
                ms, eager, scripted = interleaved(
                    [lambda: aotc_ms(run_model, sos[name], batch, a.threads, iters),
                     lambda: torch_ms(module, x, iters),
                     lambda: torch_ms(script, x, iters)], a.repeats)
                gf = work / ms / 1e6
                measured(rows, f"{name} batch {batch} ({work / 1e9:.2f} GFLOP)", ms,
                         f"{gf:.1f} GF/s = {100 * gf / peak:.0f}% of peak", eager, scripted)

        # GPT-2 small: ids of random tokens in [0, 10) from run_model, random weights.
        gpt2_so = os.path.join(tmp, "gpt2.so")
        seconds = wall_s([aotc, "export", os.path.join(ROOT, "examples", "gpt2", "gpt2.cpp"),
                          "--entry", "forward", "--dyn", "batch=1..8", "--dyn", "seq=1..128",
                          "-o", gpt2_so], 1)
        exported(export_rows, "export GPT-2 small (--entry forward, batch 1..8, seq 1..128)",
                 seconds, gpt2_so)
        gpt2 = GPT2().eval()
        for batch in BATCHES:
            seq = 128
            ids = torch.randint(0, 10, (batch, seq))
            work = gpt2_flops(batch, seq)
            iters = 5 if batch == 1 else 3
            script = warm(torchscript(gpt2, ids), ids)
            warm(gpt2, ids)
            ms, eager, scripted = interleaved(
                [lambda: aotc_ms(run_model, gpt2_so, batch, a.threads, iters,
                                 f"input_ids={batch}x{seq}"),
                 lambda: torch_ms(gpt2, ids, iters),
                 lambda: torch_ms(script, ids, iters)], a.repeats)
            gf = work / ms / 1e6
            measured(rows, f"GPT-2 small batch {batch} seq {seq} ({work / 1e9:.1f} GFLOP)", ms,
                     f"{gf:.1f} GF/s = {100 * gf / peak:.0f}% of peak", eager, scripted)

        # GPT-2 small generating one token after 127 cached positions (the 129th of a 128-token
        # text): every weight is read once per step, so this is a memory-bound case.
        decode_so = os.path.join(tmp, "gpt2_decode.so")
        seconds = wall_s([aotc, "export", os.path.join(ROOT, "examples", "gpt2", "gpt2.cpp"),
                          "--entry", "decode", "--dyn", "batch=1..8", "--dyn", "past=1..255",
                          "-o", decode_so], 1)
        exported(export_rows, "export GPT-2 small (--entry decode, batch 1..8, past 1..255)",
                 seconds, decode_so)
        decoder = GPT2Decode(gpt2).eval()
        for batch in BATCHES:
            past = 127
            ids = torch.randint(0, 10, (batch, 1))
            cache = torch.randn(12, 2, batch, 12, past, 64)
            iters = 20
            script = torchscript(decoder, (ids, cache))
            scripted_call = warm(lambda x: script(*x), (ids, cache))
            eager_call = warm(lambda x: decoder(*x), (ids, cache))
            ms, eager, scripted = interleaved(
                [lambda: aotc_ms(run_model, decode_so, batch, a.threads, iters,
                                 f"input_ids={batch}x1",
                                 ["--entry", "decode", "--input",
                                  f"past=12x2x{batch}x12x{past}x64"]),
                 lambda: torch_ms(eager_call, (ids, cache), iters),
                 lambda: torch_ms(scripted_call, (ids, cache), iters)], a.repeats)
            weights_gb = sum(p.numel() for p in gpt2.parameters()) * 4 / 1e9
            measured(rows, f"GPT-2 small decode batch {batch} after {past} positions", ms,
                     f"{weights_gb / ms * 1e3:.1f} GB/s of weights read", eager, scripted, 2)

        # Start-up: everything a fresh process pays before its first answer. The module is saved
        # frozen: torch 1.13 cannot load what optimize_for_inference returns.
        module = MODELS["ResNet-50"][1]().eval()
        x = torch.randn(1, 3, 224, 224)
        with torch.no_grad():
            script = torch.jit.freeze(torch.jit.trace(module, x))
        pt = os.path.join(tmp, "resnet50.pt")
        torch.jit.save(script, pt)
        aotc_start = wall_s([run_model, sos["ResNet-50"], "--input", "x=1x3x224x224", "--threads",
                             str(a.threads), "--iters", "0"], a.repeats)
        snippet = (f"import torch; torch.set_num_threads({a.threads}); m = torch.jit.load({pt!r});"
                   " torch.no_grad().__enter__(); m(torch.randn(1, 3, 224, 224))")
        torch_start = wall_s([sys.executable, "-c", snippet], a.repeats, env=os.environ.copy())
        start_row = ["start-up ResNet-50, batch 1 (fresh process to first output)",
                     f"{aotc_start:.2f} s", "load the .so + first run (run_model --iters 0)",
                     "", f"{torch_start:.2f} s", f"{torch_start / aotc_start:.2f}x"]

    table(["case", "aotc", "aotc throughput", "torch eager", "torch script", "torch best / aotc"],
          rows + [start_row])
    print("throughput: the direct convolutions' FLOPs per second; the Winograd ones (3x3, stride 1)"
          " do fewer multiplications, so for ResNet it is an effective rate")
    print()
    table(["export", "time", "artifact"], export_rows)
    print(f"load average {os.getloadavg()[0]:.1f} at the end (the machine is shared)")


if __name__ == "__main__":
    sys.exit(main())
