// Helpers shared by the test units: fixture paths, JSON, sha256 of a tensor's contiguous bytes.
#pragma once

#include "compute_backend.h"
#include "io/error.h"
#include "torch/torch_file.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QString>
#include <QTest>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
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

} // namespace testutil
