// Helpers shared by the test units: fixture paths, JSON, sha256 of a tensor's contiguous bytes.
#pragma once

#include "compute_backend.h"
#include "io/error.h"
#include "io/folder.h"
#include "io/input_file.h"
#include "layout/family.h"
#include "torch/torch_file.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QString>
#include <QTest>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace testutil {

// The message of the ckpt::Error that `f` throws, or "" when it throws none.
template <typename F> QString errorOf(F&& f)
{
    try {
        f();
    } catch (const ckpt::Error& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

// The tag's facts that are --json badges too, as the badges object ("model_type": "llama").
inline nlohmann::ordered_json badges(const ckpt::layout::Tag& t)
{
    nlohmann::ordered_json b = nlohmann::ordered_json::object();
    for (const auto& f : t.facts)
        if (!f.key.empty()) b[f.key] = f.json;
    return b;
}

inline std::string dataDir()
{
    return CKPT_TEST_DATA;
}

// `dir`/run: a copy of the zero2_bf16_w2 fixture whose latest tag (global_step4) lost rank 1's
// optimizer states, as a save that did not complete on every rank leaves it. Opened leniently,
// that tag is kept and marked unreadable. Returns the run's path.
inline std::string runWithAnUnreadableLatestTag(const std::string& dir)
{
    namespace fs = std::filesystem;
    const fs::path run = fs::path(dir) / "run";
    fs::copy(dataDir() + "/deepspeed/zero2_bf16_w2", run, fs::copy_options::recursive);
    fs::remove(run / "global_step4" / "bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt");
    return run.string();
}

inline nlohmann::json readJson(const std::string& path)
{
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

// Every expectation file the fixture generators wrote, as paths.
inline std::vector<std::string> torchExpectations()
{
    std::vector<std::string> out;
    QDir root(QString::fromStdString(dataDir() + "/torch"));
    for (const QString& ver : root.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
        QDir d(root.filePath(ver));
        for (const QString& f : d.entryList({"*.expect.json"}, QDir::Files, QDir::Name))
            out.push_back(d.filePath(f).toStdString());
    }
    return out;
}

// One data row per expectation file, in the column "expect".
inline void addExpectationRows()
{
    QTest::addColumn<QString>("expect");
    // A missing or moved fixture folder would add no rows, and every row test would pass: the
    // torch fixtures are dozens (both torch versions).
    QVERIFY2(torchExpectations().size() >= 20, "tests/data/torch holds too few fixtures");
    for (const auto& e : torchExpectations())
        QTest::newRow(e.substr(dataDir().size()).c_str()) << QString::fromStdString(e);
}

inline std::string sha256Hex(const uint8_t* data, size_t n)
{
    return QCryptographicHash::hash(QByteArrayView(data, qsizetype(n)), QCryptographicHash::Sha256)
        .toHex()
        .toStdString();
}

// sha256 of a whole file, hex; empty when it cannot be read.
inline QByteArray sha256File(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    QCryptographicHash h(QCryptographicHash::Sha256);
    h.addData(&f);
    return h.result().toHex();
}

inline std::vector<uint8_t> contiguousBytes(const ckpt::torch::TorchFile& f, const ckpt::torch::Tensor& t)
{
    std::vector<uint8_t> out(t.nbytes());
    if (out.empty()) return out;
    const auto blob = f.storageBytes(t.storage);
    ckpt::gpu::StridedView v{blob.bytes.data(), ckpt::torch::elementSize(t.dtype), t.shape, t.stride,
                             t.storageOffset};
    ckpt::gpu::cpuBackend().gather(v, 0, t.numel(), out.data());
    return out;
}

// A family of the tests' own, recognised by a marker file in its folder that lists the tags one
// per line (the last is the latest): the tests proving that a family is its recognizer and
// nothing else (tst_fake_family, tst_stacked_family) differ only in how a tag is opened.
// A family written only against io::Folder (as every family is): a folder holding a marker file
// that names its tags, one per line, each a folder beside it. It opens wherever the folder lives,
// local, in an object store or on a plain HTTP server (which it asks for the marker by name).
class MarkerFamily : public ckpt::layout::Family
{
public:
    explicit MarkerFamily(std::string marker)
        : m_marker(std::move(marker)), m_lookedFor("a " + m_marker + " file")
    {
    }
    std::string_view lookedFor() const override { return m_lookedFor; }
    std::vector<std::string> namesAsked() const override { return {m_marker}; }
    bool match(const std::string& path) const override
    {
        const ckpt::io::Folder folder(path);
        return folder.exists() && folder.sizeOf(m_marker);
    }
    ckpt::layout::TagList listTags(const std::string& path) const override
    {
        const ckpt::io::Folder folder(path);
        ckpt::layout::TagList l;
        l.root = path;
        std::istringstream in(ckpt::io::readSmallFile(folder.file(m_marker), 1 << 16));
        for (std::string name; std::getline(in, name);)
            if (!name.empty()) l.tags.push_back({name, folder.folder(name).path()}), l.latest = name;
        return l;
    }

protected:
    // Tag `index` of the list: its name, folder and whether it is the latest.
    static ckpt::layout::Tag listedTag(const ckpt::layout::TagList& list, size_t index)
    {
        ckpt::layout::Tag t;
        t.name = list.tags[index].first;
        t.dir = list.tags[index].second;
        t.latest = t.name == list.latest;
        return t;
    }

private:
    std::string m_marker, m_lookedFor;
};

} // namespace testutil
