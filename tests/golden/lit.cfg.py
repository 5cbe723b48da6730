# lit configuration of the golden tests: `.aotc` files whose RUN lines pipe `aotc opt` into
# FileCheck. Run through ctest (label golden), or `lit -sv build/tests/golden`.
# With AOTC_UPDATE_GOLDEN=1 in the environment, the CHECK lines of generated test files are
# rewritten from the current output first (tools/dev/update_golden.py), then the tests run.
import os
import subprocess

import lit.formats

config.name = "aotc-golden"
config.test_format = lit.formats.ShTest(execute_external=False)
# Model files (.cpp) under trace/ are traced by `aotc export`.
config.suffixes = [".aotc", ".cpp"]
# Files that tests read but that are not tests themselves live in Inputs/ directories.
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = os.path.join(config.aotc_obj_root, "tests", "golden")

config.substitutions.append(("%aotc_src", config.aotc_src_root))
config.substitutions.append(("%aotc", config.aotc_tool))
config.substitutions.append(("%mlp_reference", config.mlp_reference))
config.substitutions.append(("%npy_allclose", config.npy_allclose))
config.substitutions.append(("%run_captioner", config.run_captioner))
config.substitutions.append(("%generate", config.generate))
config.substitutions.append(("%print_nvptx", config.print_nvptx))
config.substitutions.append(("%cuda_runtime_check", config.cuda_runtime_check))
config.substitutions.append(("%gpu_check", config.gpu_check))
config.substitutions.append(("%run_model", config.run_model))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append((r"\bFileCheck\b", config.filecheck))
# The ASan+UBSan build: tests that only repeat the release build's checks ten times slower (whole
# models on the emulated CUDA device, whose JIT-compiled kernels are not instrumented anyway) say
# UNSUPPORTED: sanitizer.
if getattr(config, "aotc_sanitize", False):
    config.available_features.add("sanitizer")
# The CUDA toolkit (ptxas, libdevice, the stub libcuda) that CUDA exports need: tests that export
# for CUDA say REQUIRES: cuda-toolkit. setup.sh installs it; CUDA_PATH overrides where it is.
cuda_path = os.environ.get("CUDA_PATH") or "/usr/local/cuda"
if os.access(os.path.join(cuda_path, "bin", "ptxas"), os.X_OK):
    config.available_features.add("cuda-toolkit")
config.substitutions.append(
    ("%cuda_stub", os.path.join(cuda_path, "lib64", "stubs", "libcuda.so"))
)
# `not` and `count` come from LLVM's tool directory too.
config.environment["PATH"] = os.pathsep.join(
    [os.path.dirname(config.filecheck), config.environment.get("PATH", "")]
)

if os.environ.get("AOTC_UPDATE_GOLDEN") == "1":
    script = os.path.join(config.aotc_src_root, "tools", "dev", "update_golden.py")
    tests = []
    for root, _, files in os.walk(config.test_source_root):
        tests += [os.path.join(root, f) for f in sorted(files) if f.endswith(".aotc")]
    # Files without the script's NOTE line hold hand-written checks; the script leaves them alone.
    subprocess.run(
        [config.python_executable, script, "--aotc", config.aotc_tool] + sorted(tests),
        check=True,
    )
