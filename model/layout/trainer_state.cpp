#include "layout/trainer_state.h"

#include "io/error.h"
#include "io/input_file.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace ckpt::layout {

namespace {

using Json = nlohmann::ordered_json;

constexpr uint64_t kMaxStateBytes = 64u << 20;
// trainer_state.json nests four deep (stateful_callbacks/TrainerControl/args/...); a file nested
// far deeper is no Trainer's, and refusing it keeps parsing and freeing it off a deep stack.
constexpr int kMaxDepth = 32;

// Python's json writes NaN, Infinity and -Infinity bare (a diverged loss, a grad_norm of inf),
// which JSON has no words for: they become the strings "NaN", "Infinity", "-Infinity" here, so
// the file parses and number() reads them back.
std::string withBareNumbersQuoted(std::string_view text)
{
    std::string out;
    out.reserve(text.size() + 16);
    bool inString = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (inString) {
            out += c;
            if (c == '\\' && i + 1 < text.size())
                out += text[++i];
            else if (c == '"')
                inString = false;
            continue;
        }
        if (c == '"') inString = true;
        bool replaced = false;
        for (std::string_view word : {"-Infinity", "Infinity", "NaN"})
            if (text.substr(i, word.size()) == word) {
                out += '"';
                out += word;
                out += '"';
                i += word.size() - 1;
                replaced = true;
                break;
            }
        if (!replaced) out += c;
    }
    return out;
}

class Reader
{
public:
    explicit Reader(const std::string& file) : m_file(file) {}

    [[noreturn]] void fail(const std::string& what) const
    {
        throw Error("trainer_state.json: " + what, m_file);
    }

    // A number, or nullopt for a missing key or null; NaN and infinities as quoted above.
    std::optional<double> number(const Json& j, const std::string& key, const std::string& where) const
    {
        const auto it = j.find(key);
        if (it == j.end() || it->is_null()) return std::nullopt;
        if (it->is_number()) return it->get<double>();
        if (it->is_string()) {
            const auto& s = it->get_ref<const std::string&>();
            if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
            if (s == "Infinity") return std::numeric_limits<double>::infinity();
            if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
        }
        fail(where + key + " is not a number");
    }

    std::optional<int64_t> integer(const Json& j, const std::string& key, const std::string& where) const
    {
        const auto it = j.find(key);
        if (it == j.end() || it->is_null()) return std::nullopt;
        if (it->is_number_integer()) return it->get<int64_t>();
        // A whole float (some versions log "step": 4.0) is still a step.
        if (it->is_number_float()) {
            const double d = it->get<double>();
            if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) return int64_t(d);
        }
        fail(where + key + " is not an integer");
    }

    std::string text(const Json& j, const std::string& key) const
    {
        const auto it = j.find(key);
        if (it == j.end() || it->is_null()) return {};
        if (!it->is_string()) fail(key + " is not a string");
        return it->get<std::string>();
    }

    TrainingLogEntry entry(const Json& e, size_t index) const
    {
        const std::string where = "log_history[" + std::to_string(index) + "].";
        if (!e.is_object()) fail("log_history[" + std::to_string(index) + "] is not an object");
        TrainingLogEntry out;
        out.step = integer(e, "step", where).value_or(-1);
        out.epoch = number(e, "epoch", where);
        out.loss = number(e, "loss", where);
        out.learningRate = number(e, "learning_rate", where);
        out.gradNorm = number(e, "grad_norm", where);
        out.evalLoss = number(e, "eval_loss", where);
        static const char* const kNamed[] = {"step",          "epoch",     "loss",
                                             "learning_rate", "grad_norm", "eval_loss"};
        for (const auto& [key, value] : e.items()) {
            if (std::find(std::begin(kNamed), std::end(kNamed), key) != std::end(kNamed)) continue;
            // Other numbers are kept for the chart; a string or list (a metric's label) is not one.
            if (value.is_number() || value.is_string())
                if (const auto v = value.is_number() ? std::optional<double>(value.get<double>())
                                                     : numberOrNothing(value.get<std::string>()))
                    out.other.push_back({key, *v});
        }
        return out;
    }

private:
    static std::optional<double> numberOrNothing(const std::string& s)
    {
        if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
        if (s == "Infinity") return std::numeric_limits<double>::infinity();
        if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
        return std::nullopt;
    }

    const std::string& m_file;
};

Json parseBounded(std::string_view text, const Reader& r)
{
    const Json::parser_callback_t depthLimit = [&r](int depth, Json::parse_event_t, Json&) {
        if (depth > kMaxDepth) r.fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
        return true;
    };
    try {
        return Json::parse(withBareNumbersQuoted(text), depthLimit);
    } catch (const nlohmann::json::exception& e) {
        r.fail(std::string("not valid JSON (") + e.what() + ")");
    }
}

} // namespace

std::string TrainingLog::bestCheckpointName() const
{
    std::string s = bestModelCheckpoint;
    while (!s.empty() && (s.back() == '/' || s.back() == '\\'))
        s.pop_back();
    const size_t slash = s.find_last_of("/\\");
    return slash == std::string::npos ? s : s.substr(slash + 1);
}

TrainingLog parseTrainerState(std::string_view text, const std::string& file)
{
    const Reader r(file);
    const Json j = parseBounded(text, r);
    if (!j.is_object()) r.fail("not a JSON object");
    TrainingLog s;
    const auto step = r.integer(j, "global_step", "");
    if (!step) r.fail("has no global_step");
    s.globalStep = *step;
    s.epoch = r.number(j, "epoch", "");
    s.bestModelCheckpoint = r.text(j, "best_model_checkpoint");
    s.bestMetric = r.number(j, "best_metric", "");
    s.bestGlobalStep = r.integer(j, "best_global_step", "");
    // TrainingArguments take these as ratios of the run too (0.1): only whole ones are steps.
    for (auto [key, field] :
         {std::pair{"max_steps", &s.maxSteps}, std::pair{"save_steps", &s.saveSteps},
          std::pair{"logging_steps", &s.loggingSteps}, std::pair{"eval_steps", &s.evalSteps}})
        if (const auto it = j.find(key); it != j.end() && it->is_number_integer())
            *field = it->get<int64_t>();
    if (const auto it = j.find("log_history"); it != j.end() && !it->is_null()) {
        if (!it->is_array()) r.fail("log_history is not a list");
        s.logHistory.reserve(it->size());
        for (size_t i = 0; i < it->size(); ++i)
            s.logHistory.push_back(r.entry((*it)[i], i));
    }
    return s;
}

TrainingLog readTrainerState(const std::string& path)
{
    return parseTrainerState(io::readSmallFile(path, kMaxStateBytes), path);
}

} // namespace ckpt::layout
