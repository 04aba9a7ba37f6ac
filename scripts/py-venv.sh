#!/usr/bin/env bash
# Builds the test suite's Python venv (the protocol stubs and the smg gateway pinned in
# tests/python/requirements.txt) where tests/common/python.rs looks for it, so that scripts/test.sh
# can install it while Rust compiles. Same contract as python.rs: the venv counts as current when its
# stamp file holds exactly the requirements it was built from; a half-built venv is never in place.
# Given a requirements file and the imports that prove it installed, it builds that venv instead, the
# same way (scripts/test.sh: the layer checker's, from scripts/layers-requirements.txt).
# Usage: scripts/py-venv.sh VENV_DIR [REQUIREMENTS_FILE IMPORT_CHECK]
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$1
requirements=${2:-tests/python/requirements.txt}
stamp=trtllm-requirements.txt
check=${3:-'import grpc, google.protobuf, smg_grpc_proto.generated.trtllm_service_pb2_grpc'}

if cmp -s "$requirements" "$venv/$stamp" && "$venv/bin/python" -c "$check" 2>/dev/null; then
    exit 0
fi
staging="$venv.staging-$$"
rm -rf "$staging"
trap 'rm -rf "$staging"' EXIT
python3 -m venv "$staging"
"$staging/bin/python" -m pip install --quiet --disable-pip-version-check --timeout 30 --retries 2 \
    -r "$requirements"
"$staging/bin/python" -c "$check"
cp "$requirements" "$staging/$stamp"
rm -rf "$venv"
mv "$staging" "$venv"
