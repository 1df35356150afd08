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
// integers such as tokenizer_config's int(1e30) as doubles: for views; a file to write goes
// through pickleToJsonText); an object whose state is a dict as
// that dict plus "__class__"; anything else as its pyRepr text: it was never JSON to begin with.
// Bounded: past 1,000,000 values or 32 MiB of text (shared subtrees count each time they are
// reached), what is left is one "<not shown: ...>" note.
nlohmann::ordered_json pickleToJson(const pickle::Value* v);

// The same value as the text of a JSON file, as Python's json.dumps(v, indent=2,
// ensure_ascii=False) writes it: keys in pickle order (the order json.load read them in) and
// every integer exact, however large: tokenizer_config.json's model_max_length is int(1e30), which
// must come back as 1000000000000000019884624838656, never 1e+30 (a float a tokenizer then gets).
// What pickleToJson would show as text is written as that text, on one line. Same bounds.
std::string pickleToJsonText(const pickle::Value* v);

} // namespace ckpt::torch
