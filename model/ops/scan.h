// Lists every global a file's pickles reference and marks the dangerous ones. Parses only; a
// stream that breaks part-way still reports what it referenced up to that point.
#pragma once

#include "pickle/machine.h"
#include "pickle/safety.h"

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace ckpt::ops {

struct ScanFinding
{
    std::string module;
    std::string name;
    pickle::Safety safety;
    int count = 0;
    std::string where; // "archive/data.pkl @ 12"
};

struct ScanReport
{
    std::string file;
    std::string format;
    int pickles = 0;
    std::vector<ScanFinding> findings; // first-seen order
    std::vector<std::string> errors;   // pickles that could not be parsed to the end
    bool dangerous() const;
};
// `ckpt scan --json`: the globals referenced, with their safety, and the pickles left unread.
nlohmann::ordered_json toJson(const ScanReport& r);

ScanReport scanFile(const std::string& path);

} // namespace ckpt::ops
