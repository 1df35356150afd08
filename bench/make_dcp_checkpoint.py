"""A large PyTorch DCP folder for bench/dcp.sh, saved by torch itself: WORLD gloo processes on CPU,
each holding only its shards (DTensor.from_local, so no process ever holds a whole tensor), then
`dcp.save({"model": state_dict})` with the default FileSystemWriter.

Tensors: LAYERS blocks of two fp32 matrices, one sharded on dim 0 and one on dim 1 (the case
where a consolidator must assemble rows from every rank), plus an unsharded bf16 norm each.

Usage: make_dcp_checkpoint.py OUT_DIR [GB] [WORLD]
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.multiprocessing as mp
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Shard

ROWS, COLS = 6144, 4096  # 96 MiB of fp32 per matrix


def run(rank, world, out, layers):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (world,))
    g = torch.Generator().manual_seed(1000 + rank)
    sd = {}
    for i in range(layers):
        # rows split evenly over the ranks; columns too (shapes chosen divisible by world)
        up = torch.randn(ROWS // world, COLS, generator=g)
        down = torch.randn(COLS, ROWS // world, generator=g)
        sd[f"layers.{i}.up.weight"] = DTensor.from_local(up, mesh, [Shard(0)], run_check=False,
                                                         shape=(ROWS, COLS), stride=(COLS, 1))
        sd[f"layers.{i}.down.weight"] = DTensor.from_local(down, mesh, [Shard(1)], run_check=False,
                                                           shape=(COLS, ROWS), stride=(ROWS, 1))
        sd[f"layers.{i}.norm.weight"] = torch.full((COLS,), 1.0 + i, dtype=torch.bfloat16)
    dcp.save({"model": sd}, checkpoint_id=out)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    out = sys.argv[1]
    gb = float(sys.argv[2]) if len(sys.argv) > 2 else 2.5
    world = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    layers = max(1, round(gb * 1e9 / (2 * ROWS * COLS * 4)))
    assert ROWS % world == 0
    mp.spawn(run, args=(world, out, layers), nprocs=world, join=True)
    total = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    print(f"{out}: {layers} layers, {total} bytes, world {world}")
