#!/usr/bin/env python3
"""aotc artifacts served by NVIDIA's tritonserver through libtriton_aotc.so, checked with tritonclient.

One server on 127.0.0.1 (free ports, explicit model control) holds examples/mlp, a tiny ResNet
(examples/resnet/tiny_basic.cpp, both entries), an embedding (i64 ids) and a buffer-updating
counter under several configs, and GPU-only exports of the MLP and the embedding served on aotc's
emulated CUDA device (the device path of KIND_GPU instances: device buffers, copies, graphs). Over HTTP and gRPC: health, metadata and configs as the backend
auto-completes them, answers equal to `aotc run` on the same inputs, bad requests (Triton's own
checks, and aotc's range checks with the runtime's message), 32 concurrent clients whose requests
the dynamic batcher joins (every answer right, the server's batch statistics showing batches of
more than one request), a bad request inside a batch answered alone, and model directories the
backend must refuse with a one-line reason. Run by run.sh, which installs the server and client.
"""

import argparse
import concurrent.futures
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

ARGS = None
SERVER = None
ARTIFACTS = {}

# The parameter that puts every instance of a model on the emulated CUDA device ({emu}: the
# library's path, given to the test).
EMULATED = 'parameters { key: "emulated_cuda_device" value: { string_value: "{emu}" } }\n'

# Models loaded at start: name -> (artifact, config.pbtxt). Each config shows one feature.
GOOD = {
    # Nothing but the backend: inputs, outputs, max_batch_size and batching come from the artifact.
    "mlp": ("mlp", 'backend: "aotc"\n'),
    # A complete config: explicit dims (batch dim left out), preferred sizes, a queue delay long
    # enough for concurrent clients to meet, two instances sharing one model handle.
    "mlp_batched": ("mlp", """backend: "aotc"
max_batch_size: 64
input [ { name: "x" data_type: TYPE_FP32 dims: [ 784 ] } ]
output [ { name: "logits" data_type: TYPE_FP32 dims: [ 10 ] } ]
dynamic_batching { preferred_batch_size: [ 8, 16 ] max_queue_delay_microseconds: 100000 }
instance_group [ { count: 2 kind: KIND_CPU } ]
"""),
    # No batching: the batch dim is part of the dims.
    "mlp_nobatch": ("mlp", """backend: "aotc"
max_batch_size: 0
input [ { name: "x" data_type: TYPE_FP32 dims: [ -1, 784 ] } ]
"""),
    "resnet": ("resnet", 'backend: "aotc"\ninstance_group [ { count: 2 kind: KIND_CPU } ]\n'),
    # i64 ids whose values the runtime checks while it computes.
    "embedding": ("embedding", """backend: "aotc"
dynamic_batching { max_queue_delay_microseconds: 100000 }
"""),
    # An entry that updates a buffer: each instance gets its own model handle.
    "counter": ("counter", 'backend: "aotc"\ninstance_group [ { count: 2 kind: KIND_CPU } ]\n'),
    # The artifact's second entry.
    "resnet_any": ("resnet", """backend: "aotc"
parameters { key: "entry" value: { string_value: "forward_any_size" } }
"""),
    # A GPU-only artifact on the emulated device: two instances sharing one model handle, each
    # with its device buffers, batched, replaying CUDA graphs for the sizes it has seen.
    "mlp_cuda": ("mlp_cuda", 'backend: "aotc"\n' + EMULATED + """dynamic_batching { max_queue_delay_microseconds: 100000 }
instance_group [ { count: 2 kind: KIND_CPU } ]
parameters { key: "cuda_graphs" value: { string_value: "8" } }
"""),
    # Index checks on the device.
    "embedding_cuda": ("embedding_cuda", 'backend: "aotc"\n' + EMULATED + """dynamic_batching { max_queue_delay_microseconds: 100000 }
"""),
}

# Models the backend must refuse: name -> (artifact or None, config.pbtxt, text of the error).
BAD = {
    "bad_dims": ("mlp", """backend: "aotc"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ 700 ] } ]
""", 'config.pbtxt input "x" has dims [700], but entry "forward" of'),
    "bad_dtype": ("mlp", """backend: "aotc"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_INT32 dims: [ 784 ] } ]
""", 'config.pbtxt input "x" has data_type TYPE_INT32, but entry "forward" of'),
    "bad_output": ("mlp", """backend: "aotc"
max_batch_size: 8
output [ { name: "probs" data_type: TYPE_FP32 dims: [ 10 ] } ]
""", 'config.pbtxt output "probs" is not an output of entry "forward"'),
    "bad_batch_dim": ("mlp", """backend: "aotc"
max_batch_size: 0
input [ { name: "x" data_type: TYPE_FP32 dims: [ 784 ] } ]
""", 'config.pbtxt input "x" has dims [784], but entry "forward" of'),
    "bad_max_batch": ("mlp", 'backend: "aotc"\nmax_batch_size: 1024\n',
                      'config.pbtxt sets max_batch_size 1024, but the batch dim "batch"'),
    "bad_entry": ("mlp", """backend: "aotc"
parameters { key: "entry" value: { string_value: "decode" } }
""", 'config.pbtxt parameter "entry": '),
    "bad_parameter": ("mlp", """backend: "aotc"
parameters { key: "entree" value: { string_value: "forward" } }
""", 'config.pbtxt parameter "entree" is unknown to the aotc backend'),
    # KIND_GPU where there is no GPU: the server refuses it before the backend sees the model
    # (the emulated-device models above run the backend's device path instead).
    "bad_gpu": ("mlp", 'backend: "aotc"\ninstance_group [ { kind: KIND_GPU } ]\n',
                "has kind KIND_GPU but no GPUs are available"),
    "bad_missing": (None, 'backend: "aotc"\n', "does not exist"),
    "bad_cuda_only_on_cpu": ("mlp_cuda", 'backend: "aotc"\n', "the artifact has no CPU code"),
    "bad_emulated_device": ("mlp", 'backend: "aotc"\n' + EMULATED.replace("{emu}", "/no/libemu.so"),
                            'config.pbtxt parameter "emulated_cuda_device": /no/libemu.so'),
    "bad_not_artifact": ("config.pbtxt", 'backend: "aotc"\n', "not an ELF file"),
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(*cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    return done


def aotc_run(artifact, entry, x, input="x", output="logits", device="cpu"):
    """The artifact's answer for input x through `aotc run` (the reference the server must match)."""
    with tempfile.TemporaryDirectory() as tmp:
        np.save(os.path.join(tmp, "x.npy"), x)
        run(ARGS.aotc, "run", artifact, "--entry", entry, "--input", f"{input}={tmp}/x.npy",
            "--output", tmp, "--device", device)
        return np.load(os.path.join(tmp, f"{output}.npy"))


def write_model(repo, name, artifact, config):
    os.makedirs(os.path.join(repo, name, "1"))
    with open(os.path.join(repo, name, "config.pbtxt"), "w") as f:
        f.write(config.replace("{emu}", ARGS.emulated_cuda_device))
    if artifact == "config.pbtxt":
        os.symlink(os.path.join(repo, name, "config.pbtxt"), os.path.join(repo, name, "1", "model.so"))
    elif artifact:
        os.symlink(ARTIFACTS[artifact], os.path.join(repo, name, "1", "model.so"))


class Server:
    def __init__(self, repo, log):
        self.http, self.grpc, self.metrics = free_port(), free_port(), free_port()
        self.log = log
        cmd = [ARGS.server, "--model-repository", repo, "--backend-directory", ARGS.backends,
               "--model-control-mode", "explicit", "--http-address", "127.0.0.1",
               "--http-port", str(self.http), "--grpc-address", "127.0.0.1",
               "--grpc-port", str(self.grpc), "--metrics-address", "127.0.0.1",
               "--metrics-port", str(self.metrics), "--allow-gpu-metrics", "false",
               "--exit-timeout-secs", "5",
               # Readiness stays about the server: test_bad_models_are_refused's failed loads
               # would otherwise make it unready.
               "--strict-readiness", "false",
               # The backend's verbose lines say when a joined run failed.
               "--log-verbose", "1"]
        for name in GOOD:
            cmd += ["--load-model", name]
        # The emulated device counts its CUDA graph launches here (tests/triton/cuda_emu.cpp).
        self.graph_launches = os.path.join(os.path.dirname(log), "graph-launches")
        if os.path.exists(self.graph_launches):
            os.remove(self.graph_launches)
        env = dict(os.environ, AOTC_EMU_GRAPH_LAUNCHES_FILE=self.graph_launches)
        with open(log, "w") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        client = httpclient.InferenceServerClient(f"127.0.0.1:{self.http}")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                sys.exit(f"tritonserver exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                if client.is_server_ready():
                    return
            except Exception:
                pass
            time.sleep(0.1)
        self.stop()
        sys.exit(f"tritonserver was not ready within 60 s:\n{self.tail()}")

    def tail(self, lines=40):
        with open(self.log) as f:
            return "".join(f.readlines()[-lines:])

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def setUpModule():
    global SERVER
    os.makedirs(ARGS.work, exist_ok=True)
    src = ARGS.source_root
    ARTIFACTS["mlp"] = os.path.join(ARGS.work, "mlp.so")
    ARTIFACTS["resnet"] = os.path.join(ARGS.work, "resnet.so")
    run(ARGS.aotc, "export", f"{src}/examples/mlp/mlp.cpp", "--seed", "3", "-o", ARTIFACTS["mlp"])
    run(ARGS.aotc, "export", f"{src}/examples/resnet/tiny_basic.cpp", "--dyn", "batch=1..16",
        "--seed", "4", "-o", ARTIFACTS["resnet"])
    ARTIFACTS["embedding"] = os.path.join(ARGS.work, "embedding.so")
    run(ARGS.aotc, "export", f"{src}/tests/triton/embedding.cpp", "-o", ARTIFACTS["embedding"])
    ARTIFACTS["counter"] = os.path.join(ARGS.work, "counter.so")
    run(ARGS.aotc, "export", f"{src}/tests/triton/counter.cpp", "-o", ARTIFACTS["counter"])
    gpu_only = ("--target", "cuda", "--cuda-arch", "sm_80")
    ARTIFACTS["mlp_cuda"] = os.path.join(ARGS.work, "mlp_cuda.so")
    run(ARGS.aotc, "export", f"{src}/examples/mlp/mlp.cpp", "--seed", "3", *gpu_only,
        "-o", ARTIFACTS["mlp_cuda"])
    ARTIFACTS["embedding_cuda"] = os.path.join(ARGS.work, "embedding_cuda.so")
    run(ARGS.aotc, "export", f"{src}/tests/triton/embedding.cpp", *gpu_only,
        "-o", ARTIFACTS["embedding_cuda"])
    repo = os.path.join(ARGS.work, "repository")
    shutil.rmtree(repo, ignore_errors=True)
    for name, (artifact, config) in GOOD.items():
        write_model(repo, name, artifact, config)
    for name, (artifact, config, _) in BAD.items():
        write_model(repo, name, artifact, config)
    SERVER = Server(repo, os.path.join(ARGS.work, "tritonserver.log"))


def tearDownModule():
    if SERVER:
        SERVER.stop()


def clients():
    """One client per protocol: (name, module, client)."""
    return [("http", httpclient, httpclient.InferenceServerClient(f"127.0.0.1:{SERVER.http}")),
            ("grpc", grpcclient, grpcclient.InferenceServerClient(f"127.0.0.1:{SERVER.grpc}"))]


def graph_launches():
    """How many CUDA graphs the emulated device has launched in the server so far."""
    try:
        with open(SERVER.graph_launches) as f:
            return int(f.read())
    except FileNotFoundError:
        return 0


def model_stats(model, settled):
    """The server's statistics for `model` once settled(stats) holds (or after 10 s).

    A backend reports a request's statistics after sending its response, as Triton's own
    backends do, so a client that has every answer may still read the counts of a moment before.
    """
    client = httpclient.InferenceServerClient(f"127.0.0.1:{SERVER.http}")
    deadline = time.monotonic() + 10
    while True:
        stats = client.get_inference_statistics(model)["model_stats"][0]
        if settled(stats) or time.monotonic() > deadline:
            return stats
        time.sleep(0.05)


def infer(module, client, model, x, datatype="FP32", output="logits", input="x"):
    inp = module.InferInput(input, list(x.shape), datatype)
    inp.set_data_from_numpy(x)
    return client.infer(model, [inp]).as_numpy(output)


class TritonTest(unittest.TestCase):
    def test_ready(self):
        for proto, _, c in clients():
            with self.subTest(proto):
                self.assertTrue(c.is_server_live())
                self.assertTrue(c.is_server_ready())
                for name in GOOD:
                    self.assertTrue(c.is_model_ready(name), name)

    def test_metadata(self):
        want = {
            "mlp": ([-1, 784], [-1, 10]),
            "mlp_batched": ([-1, 784], [-1, 10]),
            "mlp_nobatch": ([-1, 784], [-1, 10]),
            "mlp_cuda": ([-1, 784], [-1, 10]),
            "resnet": ([-1, 3, 32, 32], [-1, 10]),
            "resnet_any": ([-1, 3, -1, -1], [-1, 10]),
        }
        for proto, _, c in clients():
            for name, (xshape, yshape) in want.items():
                with self.subTest(proto=proto, model=name):
                    m = c.get_model_metadata(name)
                    if proto == "grpc":
                        inputs = [(i.name, i.datatype, list(i.shape)) for i in m.inputs]
                        outputs = [(o.name, o.datatype, list(o.shape)) for o in m.outputs]
                    else:
                        inputs = [(i["name"], i["datatype"], i["shape"]) for i in m["inputs"]]
                        outputs = [(o["name"], o["datatype"], o["shape"]) for o in m["outputs"]]
                    self.assertEqual(inputs, [("x", "FP32", xshape)])
                    self.assertEqual(outputs, [("logits", "FP32", yshape)])

    def test_auto_completed_config(self):
        c = httpclient.InferenceServerClient(f"127.0.0.1:{SERVER.http}")
        config = c.get_model_config("mlp")
        self.assertEqual(config["max_batch_size"], 512)  # the top of the artifact's batch range
        self.assertIn("dynamic_batching", config)
        self.assertEqual([int(d) for d in config["input"][0]["dims"]], [784])
        self.assertEqual(config["input"][0]["data_type"], "TYPE_FP32")
        self.assertEqual(config["output"][0]["name"], "logits")
        self.assertEqual(c.get_model_config("resnet_any")["max_batch_size"], 16)
        self.assertEqual(c.get_model_config("mlp_nobatch")["max_batch_size"], 0)
        with open(SERVER.log) as f:
            log = f.read()
        self.assertRegex(log, r"aotc: model 'mlp_batched' serves entry .* instances on one device "
                              r"share one model handle")
        self.assertRegex(log, r"aotc: model 'counter' serves entry .* one model handle per "
                              r"instance \(the entry updates buffers\)")
        self.assertRegex(log, r"aotc: instance mlp_cuda_0_1 runs on cuda:0 \(aotc emulated")
        self.assertRegex(log, r"aotc: instance mlp_batched_0_1 runs on cpu \(cpu\)")

    def test_inference_equals_aotc_run(self):
        rng = np.random.default_rng(1)
        cases = [
            ("mlp", "forward", rng.standard_normal((5, 784), dtype=np.float32)),
            ("mlp_nobatch", "forward", rng.standard_normal((3, 784), dtype=np.float32)),
            ("resnet", "forward", rng.standard_normal((2, 3, 32, 32), dtype=np.float32)),
            ("resnet_any", "forward_any_size", rng.standard_normal((2, 3, 64, 96), dtype=np.float32)),
        ]
        for model, entry, x in cases:
            want = aotc_run(ARTIFACTS[GOOD[model][0]], entry, x)
            for proto, module, c in clients():
                with self.subTest(model=model, proto=proto):
                    got = infer(module, c, model, x)
                    self.assertEqual(got.shape, want.shape)
                    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
        # On the device: sizes seen before run into the instance's buffers (and graphs), a larger
        # one grows them.
        for rows in (5, 5, 3, 7, 5):
            x = rng.standard_normal((rows, 784), dtype=np.float32)
            want = aotc_run(ARTIFACTS["mlp_cuda"], "forward", x, device="cuda-emu")
            for proto, module, c in clients():
                with self.subTest(model="mlp_cuda", rows=rows, proto=proto):
                    np.testing.assert_allclose(infer(module, c, "mlp_cuda", x), want, rtol=1e-6,
                                               atol=1e-7)
        # A size run again and again: from its third run on an instance (the first writes into
        # runtime-allocated outputs, the second into the instance's buffers) the run context has
        # seen its addresses, and it replays a CUDA graph with the same answers.
        x = rng.standard_normal((6, 784), dtype=np.float32)
        want = aotc_run(ARTIFACTS["mlp_cuda"], "forward", x, device="cuda-emu")
        before = graph_launches()
        _, module, c = clients()[0]
        for i in range(8):
            np.testing.assert_allclose(infer(module, c, "mlp_cuda", x), want, rtol=1e-6,
                                       atol=1e-7, err_msg=f"run {i}")
        self.assertGreater(graph_launches(), before, "no run replayed a CUDA graph")
        x = rng.standard_normal((3, 4), dtype=np.float32)
        for proto, module, c in clients():
            with self.subTest(model="counter", proto=proto):
                np.testing.assert_array_equal(infer(module, c, "counter", x, output="y"),
                                              np.maximum(x, 0))

    def test_bad_requests(self):
        rng = np.random.default_rng(2)
        cases = [
            # Triton's own checks against the config the backend completed.
            ("mlp", rng.standard_normal((2, 700), dtype=np.float32), "FP32",
             "unexpected shape for input 'x'"),
            ("mlp", rng.standard_normal((2, 784)), "FP64", "data-type is 'FP64'"),
            # The dims Triton cannot check (-1), checked by the artifact's runtime: aotc's message.
            ("resnet_any", rng.standard_normal((1, 3, 40, 32), dtype=np.float32), "FP32",
             'aotc: entry "forward_any_size": input "x" dim 2 (h) = 40 is not a multiple of 32'),
            ("resnet_any", rng.standard_normal((1, 3, 32, 128), dtype=np.float32), "FP32",
             'aotc: entry "forward_any_size": input "x" dim 3 (w) = 128 is outside 32..96'),
            ("mlp_nobatch", rng.standard_normal((600, 784), dtype=np.float32), "FP32",
             'aotc: entry "forward": input "x" dim 0 (batch) = 600 is outside 1..512'),
        ]
        for model, x, datatype, message in cases:
            for proto, module, c in clients():
                with self.subTest(model=model, proto=proto, message=message):
                    with self.assertRaises(InferenceServerException) as caught:
                        infer(module, c, model, x, datatype)
                    self.assertIn(message, str(caught.exception))
        # An input the model does not have, instead of the one it needs.
        for proto, module, c in clients():
            with self.subTest(proto=proto, message="unknown input"):
                with self.assertRaises(InferenceServerException) as caught:
                    infer(module, c, "mlp", np.zeros((1, 784), np.float32), input="image")
                self.assertIn("'image'", str(caught.exception))
        # The server and the model still answer after the errors.
        _, module, c = clients()[0]
        self.assertEqual(infer(module, c, "resnet_any", np.zeros((1, 3, 32, 32), np.float32)).shape,
                         (1, 10))

    def test_concurrent_clients_are_batched(self):
        for model, artifact, device in (("mlp_batched", "mlp", "cpu"),
                                        ("mlp_cuda", "mlp_cuda", "cuda-emu")):
            with self.subTest(model):
                self.concurrent_clients(model, artifact, device)

    def concurrent_clients(self, model, artifact, device):
        rng = np.random.default_rng(3)
        n, rounds = 32, 3
        xs = [rng.standard_normal((1 + i % 2, 784), dtype=np.float32) for i in range(n)]
        whole = aotc_run(ARTIFACTS[artifact], "forward", np.concatenate(xs), device=device)
        starts = np.cumsum([0] + [len(x) for x in xs])
        barrier = threading.Barrier(n)

        def client(i):
            if i % 2:
                module, c = grpcclient, grpcclient.InferenceServerClient(f"127.0.0.1:{SERVER.grpc}")
            else:
                module, c = httpclient, httpclient.InferenceServerClient(f"127.0.0.1:{SERVER.http}")
            barrier.wait()
            return [infer(module, c, model, xs[i]) for _ in range(rounds)]

        with concurrent.futures.ThreadPoolExecutor(n) as pool:
            answers = list(pool.map(client, range(n)))
        for i, got in enumerate(answers):
            for r in range(rounds):
                np.testing.assert_allclose(got[r], whole[starts[i]:starts[i + 1]], rtol=1e-5,
                                           atol=1e-6, err_msg=f"client {i} round {r}")

        rows = rounds * sum(len(x) for x in xs)
        stats = model_stats(model, lambda s: int(s["inference_count"]) >= rows)
        sizes = {int(b["batch_size"]): int(b["compute_infer"]["count"]) for b in stats["batch_stats"]}
        self.assertEqual(int(stats["inference_count"]), rows)
        self.assertEqual(sum(size * count for size, count in sizes.items()), rows)
        self.assertTrue(any(size > 2 for size in sizes), f"no batch joined requests: {sizes}")
        self.assertLess(int(stats["execution_count"]), rounds * n)
        print(f"\n{model}: executions by batch size {dict(sorted(sizes.items()))} for "
              f"{rounds * n} requests", file=sys.stderr)

    def test_bad_request_in_a_batch_fails_alone(self):
        for model, device in (("embedding", "cpu"), ("embedding_cuda", "cuda-emu")):
            with self.subTest(model):
                self.bad_request_in_a_batch(model, device)

    def bad_request_in_a_batch(self, model, device):
        # One client's ids are out of range: the run its request joined fails, and the backend
        # runs each request of that run again alone, so only that client gets the error.
        rng = np.random.default_rng(4)
        n, bad = 16, 5
        ids = [rng.integers(0, 10, (1, 4), dtype=np.int64) for _ in range(n)]
        ids[bad][0, 2] = 99
        good = [i for i in range(n) if i != bad]
        whole = aotc_run(ARTIFACTS[model], "forward", np.concatenate([ids[i] for i in good]),
                         input="ids", output="vectors", device=device)
        barrier = threading.Barrier(n)

        def client(i):
            c = grpcclient.InferenceServerClient(f"127.0.0.1:{SERVER.grpc}")
            barrier.wait()
            try:
                return infer(grpcclient, c, model, ids[i], "INT64", "vectors", "ids")
            except InferenceServerException as e:
                return str(e)

        with concurrent.futures.ThreadPoolExecutor(n) as pool:
            answers = list(pool.map(client, range(n)))
        self.assertIn("an index is out of range in aten.embedding", str(answers[bad]))
        for row, i in enumerate(good):
            self.assertIsInstance(answers[i], np.ndarray, f"client {i}: {answers[i]}")
            np.testing.assert_array_equal(answers[i], whole[row:row + 1], err_msg=f"client {i}")
        stats = model_stats(model, lambda s: int(s["inference_stats"]["fail"]["count"]) >= 1)
        self.assertEqual(int(stats["inference_stats"]["fail"]["count"]), 1)
        with open(SERVER.log) as f:
            self.assertRegex(f.read(), r"aotc: a run of \d+ requests joined along the batch dim "
                                       r"failed \(entry \\?\"forward\\?\": an index is out of range")

    def test_metrics(self):
        _, module, c = clients()[0]
        infer(module, c, "mlp", np.zeros((1, 784), np.float32))
        with urllib.request.urlopen(f"http://127.0.0.1:{SERVER.metrics}/metrics") as r:
            text = r.read().decode()
        self.assertIn('nv_inference_request_success{model="mlp",version="1"}', text)

    def test_bad_models_are_refused(self):
        c = httpclient.InferenceServerClient(f"127.0.0.1:{SERVER.http}")
        for name, (_, _, message) in BAD.items():
            with self.subTest(name):
                with self.assertRaises(InferenceServerException) as caught:
                    c.load_model(name)
                text = str(caught.exception)
                self.assertIn(message, text)
                self.assertNotIn("\n", text.strip())
                self.assertFalse(c.is_model_ready(name))


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", required=True, help="the tritonserver binary")
    parser.add_argument("--backends", required=True, help="the directory holding aotc/")
    parser.add_argument("--aotc", required=True)
    parser.add_argument("--source-root", required=True)
    parser.add_argument("--work", required=True, help="scratch directory (artifacts, repository, log)")
    parser.add_argument("--emulated-cuda-device", required=True,
                        help="libaotc_cuda_emu.so, the emulated CUDA device the backend loads")
    ARGS, rest = parser.parse_known_args()
    for path in ("server", "backends", "aotc", "source_root", "work", "emulated_cuda_device"):
        setattr(ARGS, path, os.path.abspath(getattr(ARGS, path)))
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
