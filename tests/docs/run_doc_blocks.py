#!/usr/bin/env python3
"""Runs the ```sh blocks of README.md and docs/*.md against a build tree, so the docs stay true.

Each markdown file gets a fresh scratch root: a directory holding a symlink to every top-level entry
of the source tree, except `build`, which is a real directory holding a symlink to every directory
of the build tree under test. The blocks of a file run in order, from that root, each with
`bash -euo pipefail`, so `build/tools/aotc/aotc` is this build's aotc and `-o build/mlp.so` writes
into the scratch root, never into the source or build tree.

Markers, on the line just before a block:
  <!-- docs-test: skip (why) -->   README.md and docs/*.md: do not run this block (say why)
  <!-- docs-test: run -->          any other markdown file given: run this block (unmarked ones
                                   there are not run)
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = re.compile(r"^\s*<!--\s*docs-test:\s*skip\b.*-->\s*$")
RUN = re.compile(r"^\s*<!--\s*docs-test:\s*run\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*(\S*)")


class Block:
    def __init__(self, path, line, text, marker):
        self.path, self.line, self.text, self.marker = path, line, text, marker


def blocks_of(path):
    """The ```sh blocks of a markdown file, each with its first line number and its marker."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(2), m.group(3), i
        i += 1
        body = []
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            sys.exit(f"{path}:{start + 1}: code block is never closed")
        i += 1
        if lang not in ("sh", "bash", "shell"):
            continue
        marker = None
        prev = lines[start - 1] if start > 0 else ""
        if SKIP.match(prev):
            marker = "skip"
        elif RUN.match(prev):
            marker = "run"
        elif "docs-test" in prev:
            sys.exit(f"{path}:{start}: unknown docs-test marker: {prev.strip()}")
        out.append(Block(path, start + 2, "\n".join(body) + "\n", marker))
    return out


def make_root(source, build, scratch):
    """A scratch repository root: the source tree's entries by symlink, `build` as a directory of
    symlinks to the build tree's directories (its files, such as CMakeCache.txt, stay out)."""
    for name in sorted(os.listdir(source)):
        if name != "build":
            os.symlink(os.path.join(source, name), os.path.join(scratch, name))
    os.mkdir(os.path.join(scratch, "build"))
    for name in sorted(os.listdir(build)):
        target = os.path.join(build, name)
        if os.path.isdir(target):
            os.symlink(target, os.path.join(scratch, "build", name))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source-root", required=True)
    parser.add_argument("--build-dir", required=True, help="the build tree whose tools run")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per block")
    parser.add_argument("--list", action="store_true", help="list the blocks and markers only")
    parser.add_argument("--keep", action="store_true", help="keep the scratch roots")
    parser.add_argument("files", nargs="*",
                        help="markdown files, relative to the source root (default: README.md, "
                             "docs/*.md and every examples/*/README.md)")
    args = parser.parse_args()
    source = os.path.realpath(args.source_root)
    build = os.path.realpath(args.build_dir)

    files = args.files
    if not files:
        files = ["README.md"]
        files += sorted("docs/" + f for f in os.listdir(os.path.join(source, "docs"))
                        if f.endswith(".md"))
        examples = os.path.join(source, "examples")
        if os.path.isdir(examples):
            files += sorted(f"examples/{d}/README.md" for d in os.listdir(examples)
                            if os.path.isfile(os.path.join(examples, d, "README.md")))

    failures, ran, skipped = [], 0, 0
    started = time.monotonic()
    for rel in files:
        # Only the user guides run by default; elsewhere a block must ask to be run.
        guide = rel == "README.md" or (rel.startswith("docs/") and rel.count("/") == 1)
        blocks = blocks_of(os.path.join(source, rel))
        todo = [b for b in blocks if (b.marker != "skip" if guide else b.marker == "run")]
        skipped += sum(1 for b in blocks if b.marker == "skip")
        if args.list:
            for b in blocks:
                state = "run" if b in todo else "skip"
                print(f"{rel}:{b.line}: {state}")
            continue
        if not todo:
            continue
        scratch = tempfile.mkdtemp(prefix="aotc-docs-")
        try:
            make_root(source, build, scratch)
            for b in todo:
                script = os.path.join(scratch, ".block.sh")
                with open(script, "w", encoding="utf-8") as f:
                    f.write(b.text)
                t0 = time.monotonic()
                try:
                    proc = subprocess.run(["bash", "-euo", "pipefail", script], cwd=scratch,
                                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, timeout=args.timeout)
                    rc, output = proc.returncode, proc.stdout.decode(errors="replace")
                except subprocess.TimeoutExpired as e:
                    rc = f"timeout after {args.timeout} s"
                    output = (e.stdout or b"").decode(errors="replace")
                ran += 1
                where = f"{rel}:{b.line}"
                if rc == 0:
                    print(f"PASS {where} ({time.monotonic() - t0:.1f} s)", flush=True)
                    continue
                print(f"FAIL {where}: exit status {rc}\n--- block ---\n{b.text}"
                      f"--- output ---\n{output}--- end of {where} ---", flush=True)
                failures.append(where)
                later = len(todo) - todo.index(b) - 1
                if later:
                    print(f"({later} later block(s) of {rel} not run: they build on this one)")
                break
        finally:
            if args.keep:
                print(f"scratch root of {rel}: {scratch}")
            else:
                shutil.rmtree(scratch, ignore_errors=True)

    if args.list:
        return 0
    print(f"{ran} blocks run, {skipped} skipped by marker, {len(failures)} failed "
          f"({time.monotonic() - started:.0f} s)")
    for where in failures:
        print(f"failed: {where}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
