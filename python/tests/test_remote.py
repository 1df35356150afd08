"""checkpoint_studio.open on http:// URLs, served by nginx (tools/servers/nginx.sh, as the C++ tests
start it) from the committed fixtures: the same keys and bytes as the local files, through the
engine's remote reader (issue 26) and the package's tensors alike."""
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import time

import pytest
import torch

import checkpoint_studio as cs
from conftest import DATA, ROOT

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    if NGINX is None:
        pytest.fail("nginx is not installed (tools/install-deps.sh installs nginx-light)")
    work = tmp_path_factory.mktemp("nginx")
    port = free_port()
    server = subprocess.Popen(["bash", str(ROOT / "tools" / "servers" / "nginx.sh"), str(work), str(port),
                               str(DATA)], start_new_session=True)
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"nginx did not start: {(work / 'error.log').read_text() if (work / 'error.log').exists() else ''}")
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}", work / "access.log"
    os.killpg(server.pid, signal.SIGQUIT)
    server.wait(timeout=20)


def same_state_dicts(remote, local):
    assert list(remote.keys()) == list(local.keys())
    for k in local:
        assert remote[k].dtype == local[k].dtype and torch.equal(remote[k], local[k]), k


@pytest.mark.parametrize("rel", ["hf/safetensors_sharded/model-00002-of-00004.safetensors",
                                 "deepspeed/zero2_bf16_w2/"])
def test_open_a_url_reads_what_the_local_file_holds(served, rel):
    base, log = served
    remote = cs.open(f"{base}/{rel}").tag()
    local = cs.open(DATA / rel.rstrip("/")).tag()
    assert remote.keys() == local.keys()
    same_state_dicts(remote.state_dict(lazy=False), local.state_dict(lazy=False))
    name = next(iter(local.keys()))
    assert torch.equal(remote.get_tensor(name), local.get_tensor(name))
    # Read over HTTP in ranges, the server's own log says (a folder's names are probed: 404s).
    lines = [l for l in log.read_text().splitlines() if f" /{rel}" in l]
    assert any(l.startswith("206 ") for l in lines)
    assert all(l.split()[0] in ("206", "404") and '"bytes=' in l for l in lines), lines


def test_a_missing_url_is_one_clear_error(served):
    base, _ = served
    with pytest.raises(cs.CheckpointError, match="nothing-here"):
        cs.open(f"{base}/nothing-here.safetensors")
