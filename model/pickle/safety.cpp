#include "pickle/safety.h"

#include <array>
#include <string>

namespace ckpt::pickle {

namespace {

bool inModule(std::string_view module, std::string_view root)
{
    return module == root || (module.size() > root.size() && module.substr(0, root.size()) == root &&
                              module[root.size()] == '.');
}

// Whole modules any scanner treats as code execution or system access.
constexpr std::array kDangerousModules = {
    "os",
    "posix",
    "nt",
    "sys",
    "subprocess",
    "runpy",
    "pty",
    "socket",
    "ssl",
    "pickle",
    "_pickle",
    "dill",
    "cloudpickle",
    "importlib",
    "_frozen_importlib",
    "_frozen_importlib_external",
    "_imp",
    "imp",
    "ctypes",
    "_ctypes",
    "webbrowser",
    "shutil",
    "asyncio",
    "aiohttp",
    "requests",
    "httplib",
    "http",
    "urllib",
    "bdb",
    "pdb",
    "code",
    "codeop",
    "marshal",
    "cProfile",
    "profile",
    "timeit",
    "trace",
    "pip",
    "venv",
    "ensurepip",
    "pydoc",
    "multiprocessing",
    "_posixsubprocess",
    "signal",
    "_signal",
    "threading",
    "_thread",
    "tempfile",
    "smtplib",
    "ftplib",
    "telnetlib",
    "socketserver",
    "xmlrpc",
    "numpy.f2py",
    "numpy.distutils",
    "torch.hub",
    "torch._dynamo",
    "torch._inductor",
    "torch.jit",
    "distutils",
    "zipimport",
    "pkgutil",
    "shelve",
    "uuid",
    "_osx_support",
    "_aix_support",
    "_pyrepl",
    "idlelib",
    "lib2to3",
    "doctest",
    "types",
};

struct Name
{
    const char* module;
    const char* name;
};
constexpr std::array kDangerousNames = {
    Name{"builtins", "eval"},
    Name{"builtins", "exec"},
    Name{"builtins", "compile"},
    Name{"builtins", "getattr"},
    Name{"builtins", "setattr"},
    Name{"builtins", "delattr"},
    Name{"builtins", "__import__"},
    Name{"builtins", "open"},
    Name{"builtins", "breakpoint"},
    Name{"builtins", "apply"},
    Name{"builtins", "globals"},
    Name{"builtins", "locals"},
    Name{"builtins", "vars"},
    Name{"builtins", "input"},
    Name{"functools", "partial"},
    Name{"operator", "attrgetter"},
    Name{"operator", "itemgetter"},
    Name{"operator", "methodcaller"},
    Name{"_operator", "attrgetter"},
    Name{"_operator", "itemgetter"},
    Name{"_operator", "methodcaller"},
    Name{"torch", "load"},
    Name{"torch.serialization", "load"},
    Name{"torch.storage", "_load_from_bytes"},
    Name{"logging", "FileHandler"},
    Name{"_io", "FileIO"},
    Name{"io", "FileIO"},
    Name{"io", "open"},
    Name{"numpy.testing._private.utils", "runstring"},
    Name{"torch.utils.collect_env", "run"},
    Name{"torch._inductor.codecache", "compile_file"},
};

constexpr std::array kTorchRebuilds = {
    "_rebuild_parameter",
    "_rebuild_parameter_with_state",
    "_rebuild_qtensor",
    "_rebuild_tensor",
    "_rebuild_tensor_v2",
    "_rebuild_tensor_v3",
    "_rebuild_sparse_tensor",
    "_rebuild_meta_tensor_no_storage",
    "_rebuild_nested_tensor",
    "_rebuild_wrapper_subclass",
    "_rebuild_device_tensor_from_numpy",
    "_rebuild_device_tensor_from_cpu_tensor",
};

constexpr std::array kTorchNames = {
    // dtypes
    "float64",
    "float32",
    "float16",
    "bfloat16",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
    "complex128",
    "complex64",
    "complex32",
    "qint8",
    "quint8",
    "qint32",
    "quint4x2",
    "quint2x4",
    "float8_e5m2",
    "float8_e4m3fn",
    "float8_e5m2fnuz",
    "float8_e4m3fnuz",
    "float8_e8m0fnu",
    "float4_e2m1fn_x2",
    "bits8",
    "bits16",
    "bits1x8",
    "bits2x4",
    "bits4x2",
    "uint16",
    "uint32",
    "uint64",
    "uint1",
    "uint2",
    "uint3",
    "uint4",
    "uint5",
    "uint6",
    "uint7",
    "int1",
    "int2",
    "int3",
    "int4",
    "int5",
    "int6",
    "int7",
    // classes and qschemes
    "Size",
    "device",
    "Tensor",
    "per_tensor_affine",
    "per_tensor_symmetric",
    "per_channel_affine",
    "per_channel_symmetric",
    "per_channel_affine_float_qparams",
};

bool endsWith(std::string_view s, std::string_view suffix)
{
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

} // namespace

Safety classifyGlobal(std::string_view module, std::string_view name)
{
    for (const char* m : kDangerousModules)
        if (inModule(module, m)) return Safety::Dangerous;
    for (const Name& n : kDangerousNames)
        if (module == n.module && name == n.name) return Safety::Dangerous;

    if (module == "collections" && (name == "OrderedDict" || name == "Counter")) return Safety::TensorSafe;
    if (module == "builtins" &&
        (name == "set" || name == "frozenset" || name == "complex" || name == "bytearray"))
        return Safety::TensorSafe;
    if (module == "_codecs" && name == "encode") return Safety::TensorSafe;
    if (module == "torch._utils")
        for (const char* r : kTorchRebuilds)
            if (name == r) return Safety::TensorSafe;
    if ((module == "torch._tensor" && name == "_rebuild_from_type_v2") ||
        (module == "torch.nn.parameter" && name == "Parameter") ||
        (module == "torch.serialization" && name == "_get_layout") ||
        (module == "torch.storage" && (name == "UntypedStorage" || name == "TypedStorage")))
        return Safety::TensorSafe;
    if (module == "torch" || module == "torch.cuda") {
        if (endsWith(name, "Storage") || endsWith(name, "Tensor")) return Safety::TensorSafe;
        for (const char* n : kTorchNames)
            if (name == n) return Safety::TensorSafe;
    }
    return Safety::Opaque;
}

const char* safetyName(Safety s)
{
    switch (s) {
    case Safety::TensorSafe:
        return "safe";
    case Safety::Opaque:
        return "opaque";
    case Safety::Dangerous:
        return "dangerous";
    }
    return "?";
}

} // namespace ckpt::pickle
