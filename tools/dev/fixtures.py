"""What the fixture scripts of tools/dev share: their arguments, the weights of `aotc weights`,
the name check against a PyTorch state_dict, and Hugging Face's save_pretrained weights."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from make_resnet_fixtures import ROOT, SEED, check_names, read_safetensors  # noqa: F401


def arguments(description, fixture_dir, seed=None):
    """--out (tests/fixtures/DIR), --aotc, and --seed where the script draws its own weights."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", fixture_dir))
    parser.add_argument("--aotc", default=os.path.join(ROOT, "build", "tools", "aotc", "aotc"))
    if seed is not None:
        parser.add_argument("--seed", type=int, default=seed)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    return args


def aotc_weights(aotc, source):
    """{name: numpy array} of `aotc weights SOURCE --seed SEED` (SOURCE relative to the repo)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "w.safetensors")
        subprocess.run([aotc, "weights", os.path.join(ROOT, source), "--seed", str(SEED), "-o", out],
                       check=True)
        return read_safetensors(out)


def load_strict(name, net, tensors):
    """Loads aotc's tensors into `net` by name, strictly, after checking names, shapes and dtypes;
    returns the errors (nothing loaded then)."""
    import torch
    errors = check_names(name, tensors, net.state_dict())
    if not errors:
        net.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()}, strict=True)
        net.eval()
    return errors


def reported(errors):
    """Prints each error on stderr; whether there were any."""
    for e in errors:
        print("error:", e, file=sys.stderr)
    return bool(errors)


def save_pretrained_weights(model, out):
    """The model.safetensors Hugging Face's save_pretrained writes, as OUT/w.safetensors."""
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        shutil.copyfile(os.path.join(tmp, "model.safetensors"), os.path.join(out, "w.safetensors"))


def randomize_hf(model, bias_std=0.1, norm_names=("LayerNorm", "layer_norm", "norm")):
    """Hugging Face's init leaves biases at zero and norms at one: random values make every name
    count."""
    import torch
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.normal_(0.0, bias_std)
            elif any(n in name for n in norm_names):
                p.normal_(1.0, 0.1)


def finish(out):
    for name in os.listdir(out):
        os.chmod(os.path.join(out, name), 0o644)
