#!/usr/bin/env bash
# The Triton backend against a real server: installs NVIDIA's tritonserver (the nvidia-pytriton
# wheel) and tritonclient into a venv under the build tree, exports the models, and runs
# triton_test.py. Exits 77 (ctest: skipped) with the reason when the wheels cannot be had (no
# network, not x86-64 Linux). Usage: run.sh BUILD_DIR EMULATED_CUDA_DEVICE_LIBRARY
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "$1" && pwd)"

skip() {
  echo "triton test SKIPPED: $*" >&2
  exit 77
}

[ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] || skip "tritonserver wheels exist for x86-64 Linux only"

# Pinned: the server whose TRITONBACKEND API the backend was tested with, and its client. The
# wheels stay in pip's cache (~/.cache/pip), so a fresh build tree installs without downloading.
# nvidia-pytriton is only wanted for the server binary and its libraries: its Python
# dependencies are left out.
client_req=("tritonclient[http,grpc]==2.51.0" "numpy<2")
server_req="nvidia-pytriton==0.7.0"
venv="${AOTC_TRITON_VENV:-$build/triton-venv}"
stamp="$venv/.aotc-requirements"
want="${client_req[*]} $server_req"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "triton test: installing $want into $venv" >&2
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv" || skip "cannot create a venv (python3-venv missing?)"
  pip=("$venv/bin/pip" install --quiet --disable-pip-version-check --retries 2)
  if ! "${pip[@]}" "${client_req[@]}" >"$venv.log" 2>&1 ||
    ! "${pip[@]}" --no-deps "$server_req" >>"$venv.log" 2>&1; then
    tail -n 3 "$venv.log" >&2
    rm -rf "$venv"
    skip "pip could not install $want (offline, or no wheel for this platform); see $venv.log"
  fi
  echo "$want" >"$stamp"
fi
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
server="$site/pytriton/tritonserver/bin/tritonserver"
[ -x "$server" ] || skip "the $server_req wheel holds no $server"

exec "$venv/bin/python" "$here/triton_test.py" --server "$server" \
  --backends "$build/tools/triton/backends" --aotc "$build/tools/aotc/aotc" \
  --source-root "$here/../.." --work "$build/tests/triton/work" --emulated-cuda-device "$2"
