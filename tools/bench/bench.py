#!/usr/bin/env python3
"""The CPU benchmark: one run, one table. Measures the machine's limits (tools/bench/probe), then
aotc artifacts (through examples/run_model) and PyTorch on the same machine side by side,
as medians of several runs.

    tools/bench/bench.py [--build build] [--threads 2] [--repeats 5]

PyTorch comes from Debian's python3-torch; run this with /usr/bin/python3 and OpenBLAS's OpenMP
build (LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp). Without torch the PyTorch
columns say so and the rest still runs."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def probe(build, threads):
    out = run([os.path.join(build, "tools", "bench", "aotc_probe"), str(threads)])
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def export(aotc, model, dyn, out):
    cmd = [aotc, "export", os.path.join(ROOT, model), "-o", out]
    for d in dyn:
        cmd += ["--dyn", d]
    start = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - start


def aotc_ms(build, so, shapes, threads, iters, repeats):
    """Median over `repeats` runs of aotc_bench's median over `iters` calls, in ms."""
    cmd = [os.path.join(build, "examples", "run_model", "run_model"), so, "--threads",
           str(threads), "--iters", str(iters), "--median-only"]
    for s in shapes:
        cmd += ["--input", s]
    values = [float(run(cmd).split()[0]) for _ in range(repeats)]
    return statistics.median(values)


def torch_ms(fn, args, iters, repeats):
    import torch
    with torch.no_grad():
        for _ in range(3):
            fn(*args)
        medians = []
        for _ in range(repeats):
            times = []
            for _ in range(iters):
                start = time.perf_counter()
                fn(*args)
                times.append((time.perf_counter() - start) * 1e3)
            medians.append(statistics.median(times))
    return statistics.median(medians)


def torch_modes(module, args, iters, repeats):
    """Eager and TorchScript (trace + freeze + optimize_for_inference) times, in ms."""
    import torch
    module.eval()
    eager = torch_ms(module, args, iters, repeats)
    with torch.no_grad():
        scripted = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(module, args)))
    script = torch_ms(scripted, args, iters, repeats)
    return eager, script


# Multiply-adds x 2 of tools/bench/models/convnet.cpp per image (convolutions and the head).
CONVNET_FLOPS = 2 * (32 * 27 * 1024 + 2 * 32 * 288 * 256 + 64 * 288 * 64 + 64 * 576 * 64
                     + 64 * 32 * 64 + 128 * 576 * 64 + 128 * 1152 * 64 + 128 * 64 * 64 + 128 * 10)


def torch_convnet():
    """tools/bench/models/convnet.cpp in PyTorch."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return torch.relu(y + (x if self.down is None else self.down(x)))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 32, 3, 1, 1, bias=False)
            self.bn = nn.BatchNorm2d(32)
            self.layers = nn.Sequential(Block(32, 32, 1), Block(32, 64, 2), Block(64, 128, 1))
            self.fc = nn.Linear(128, 10)

        def forward(self, x):
            x = torch.max_pool2d(torch.relu(self.bn(self.stem(x))), 2, 2)
            x = torch.flatten(torch.nn.functional.adaptive_avg_pool2d(self.layers(x), 1), 1)
            return self.fc(x)

    return Net()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    aotc = os.path.join(a.build, "tools", "aotc", "aotc")
    try:
        import torch
        torch.set_num_threads(a.threads)
        have_torch = True
    except ImportError:
        have_torch = False
        print("note: PyTorch is not importable here; its columns are skipped "
              "(apt-get install python3-torch libopenblas0-openmp, run with /usr/bin/python3)")

    limits = probe(a.build, a.threads)
    # The higher of the two (see bench_models.py).
    peak = max(limits["fma_peak_avx512_gflops"], limits["fma_peak_avx2_gflops"])
    copy_bw = limits["copy_bandwidth_gbs"]
    print(f"machine: {os.cpu_count()} CPUs, {a.threads} threads; FMA peak "
          f"{limits['fma_peak_avx512_gflops']:.1f} GF/s (AVX-512), "
          f"{limits['fma_peak_avx2_gflops']:.1f} GF/s (AVX2); copy bandwidth "
          f"{copy_bw:.1f} GB/s, read {limits['read_bandwidth_gbs']:.1f} GB/s")

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        gemm_so = os.path.join(tmp, "gemm.so")
        mlp_so = os.path.join(tmp, "mlp.so")
        chain_so = os.path.join(tmp, "chain.so")
        export(aotc, "tools/bench/models/gemm.cpp", [], gemm_so)
        export(aotc, "examples/mlp/mlp.cpp", ["batch=1..512"], mlp_so)
        export(aotc, "tools/bench/models/chain.cpp", [], chain_so)

        for n in (1024, 4096):
            iters = 20 if n == 1024 else 3
            ms = aotc_ms(a.build, gemm_so, [f"a={n}x{n}", f"b={n}x{n}"], a.threads, iters,
                         a.repeats)
            gf = 2 * n ** 3 / ms / 1e6
            row = [f"GEMM {n}^3 f32", f"{ms:.3f} ms", f"{gf:.1f} GF/s = {100 * gf / peak:.0f}% of peak"]
            if have_torch:
                x, y = torch.randn(n, n), torch.randn(n, n)
                t = torch_ms(torch.mm, (x, y), iters, a.repeats)
                row += [f"{t:.3f} ms", "", f"{t / ms:.2f}x"]
            rows.append(row)

        if have_torch:
            mlp = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(),
                                      torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                      torch.nn.Linear(1024, 10))
        for batch in (1, 32, 512):
            iters = 200 if batch == 1 else 50
            ms = aotc_ms(a.build, mlp_so, [f"x={batch}x784"], a.threads, iters, a.repeats)
            flops = 2 * batch * (784 * 1024 + 1024 * 1024 + 1024 * 10)
            row = [f"MLP batch {batch}", f"{ms:.4f} ms",
                   f"{flops / ms / 1e6:.1f} GF/s = {100 * flops / ms / 1e6 / peak:.0f}% of peak"]
            if have_torch:
                eager, script = torch_modes(mlp, (torch.randn(batch, 784),), iters, a.repeats)
                row += [f"{eager:.4f} ms", f"{script:.4f} ms", f"{min(eager, script) / ms:.2f}x"]
            rows.append(row)

        convnet_so = os.path.join(tmp, "convnet.so")
        export(aotc, "tools/bench/models/convnet.cpp", ["batch=1..64"], convnet_so)
        if have_torch:
            net = torch_convnet()
        for batch in (1, 32):
            iters = 50 if batch == 1 else 10
            ms = aotc_ms(a.build, convnet_so, [f"x={batch}x3x32x32"], a.threads, iters, a.repeats)
            gf = batch * CONVNET_FLOPS / ms / 1e6
            row = [f"ConvNet 32x32 batch {batch}", f"{ms:.3f} ms",
                   f"{gf:.1f} GF/s = {100 * gf / peak:.0f}% of peak"]
            if have_torch:
                eager, script = torch_modes(net, (torch.randn(batch, 3, 32, 32),), iters,
                                            a.repeats)
                row += [f"{eager:.3f} ms", f"{script:.3f} ms", f"{min(eager, script) / ms:.2f}x"]
            rows.append(row)

        n = 1 << 24
        ms = aotc_ms(a.build, chain_so, [f"x={n}", f"y={n}"], a.threads, 10, a.repeats)
        gbs = 12 * n / ms / 1e6
        row = [f"pointwise chain 2^24 (5 ops)", f"{ms:.3f} ms",
               f"{gbs:.1f} GB/s = {100 * gbs / copy_bw:.0f}% of copy bandwidth"]
        if have_torch:
            def chain(x, y):
                return torch.relu(x * y + 1.0) * 0.5 - y
            x, y = torch.randn(n), torch.randn(n)
            eager = torch_ms(chain, (x, y), 10, a.repeats)
            script = torch_ms(torch.jit.script(chain), (x, y), 10, a.repeats)
            row += [f"{eager:.3f} ms", f"{script:.3f} ms", f"{min(eager, script) / ms:.2f}x"]
        rows.append(row)

    header = ["case", "aotc", "aotc throughput", "torch eager", "torch script", "torch best / aotc"]
    if not have_torch:
        header = header[:3]
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    print(" | ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(str(c).ljust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    sys.exit(main())
