// A Hugging Face style folder holding one large pytorch_model.bin, written by our own (verified)
// torch.save writer: large enough that an export or a slim of it is still running when the GUI
// thread hears its first progress report, so a test can cancel it through the public API.
#pragma once

#include "io/output.h"
#include "ops/job.h"
#include "torch/torch_writer.h"

#include <QEventLoop>
#include <QObject>
#include <QString>
#include <QTimer>
#include <cstring>
#include <string>
#include <vector>

namespace testutil {

// `dir`/pytorch_model.bin: `tensors` float32 tensors of 4 MiB each. Returns the file's path.
inline QString writeLargeModel(const QString& dir, int tensors = 32)
{
    using namespace ckpt;
    const std::string path = dir.toStdString() + "/pytorch_model.bin";
    std::vector<torch::OutTensor> out;
    for (int i = 0; i < tensors; ++i)
        out.push_back({"layers." + std::to_string(i) + ".weight",
                       torch::DType::Float32,
                       {1024, 1024},
                       4u << 20,
                       [i](uint64_t, uint64_t n, uint8_t* d) { std::memset(d, 0x30 + i % 16, n); }});
    io::OutputTransaction tx({}, path, io::OutputTransaction::Shape::File);
    ops::CancelToken cancel;
    torch::writeTorchZip(tx.create(), out, {}, "pytorch_model", {}, cancel);
    tx.commit();
    return QString::fromStdString(path);
}

// Calls `act` on the GUI thread on each report of `dialog`'s job once it has written bytes.
template <typename Dialog, typename Act> void whenWriting(Dialog* dialog, Act act)
{
    QObject::connect(dialog, &Dialog::progressed, dialog, [act](int permille) mutable {
        if (permille > 0) act();
    });
}

// Runs the event loop until `dialog`'s job has written bytes (or a minute has passed).
template <typename Dialog> void waitUntilWriting(Dialog* dialog)
{
    QEventLoop writing;
    QObject::connect(dialog, &Dialog::progressed, &writing, [&writing](int permille) {
        if (permille > 0) writing.quit();
    });
    QTimer::singleShot(60000, &writing, &QEventLoop::quit);
    writing.exec();
}

} // namespace testutil
