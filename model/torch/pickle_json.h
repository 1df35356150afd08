// A pickled JSON-like value as JSON, for the views of configurations and client states
// (ds_config, lr_scheduler, a config.json Composer embedded). Never executes anything.
#pragma once

#include "pickle/machine.h"

#include <nlohmann/json.hpp>
#include <string>

namespace ckpt::torch {

// A dict key as text: strings and bytes as themselves, integers in decimal, others as pyRepr.
std::string keyText(const pickle::Value* key);

// Scalars, lists, tuples, dicts and OrderedDicts as themselves, keys in pickle order (big
// integers such as tokenizer_config's int(1e30) as doubles); an object whose state is a dict as
// that dict plus "__class__"; anything else as its pyRepr text: it was never JSON to begin with.
// Bounded: past 1,000,000 values or 32 MiB of text (shared subtrees count each time they are
// reached), what is left is one "<not shown: ...>" note.
nlohmann::ordered_json pickleToJson(const pickle::Value* v);

} // namespace ckpt::torch
