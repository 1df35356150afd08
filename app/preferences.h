// What the user sets once (File > Preferences...): the look, the language, where outputs go, the
// compute device, and the remote stores' settings, which a window started from the desktop has no
// shell environment to take from (so it could not reach a MinIO or an on-premises S3 at all). A
// plain value: load() and save() are its only QSettings access, and the dialog edits a copy.
#pragma once

#include "compute_backend.h"

#include <QString>
#include <map>
#include <string>
#include <vector>

namespace ckpt::app {

struct Preferences
{
    QString palette = QStringLiteral("system"); // system, light, dark
    QString language;                           // "" the system's, else "en", "zh_CN"
    QString outputFolder;                       // "" beside the input (the home folder for a URL)
    QString device = QStringLiteral("auto");    // auto, cpu, cuda
    // The remote settings, by the environment variable each stands for (remoteVariables()).
    std::map<std::string, QString> remote;

    static Preferences load();
    void save() const;
    // Gives the engine the remote settings for the variables the environment does not set: the
    // environment wins where set. Applies to the URLs opened after.
    void applyRemote() const;
    gpu::Device computeDevice() const;
};

struct RemoteVariable
{
    const char* name;  // AWS_ENDPOINT_URL, ...
    const char* label; // what the dialog calls it (translated there)
    bool file;         // a file's path: the dialog offers Browse...
};
// The remote settings Preferences offers, in the dialog's order.
const std::vector<RemoteVariable>& remoteVariables();

// The folder outputs go to by default for `input`: the one Preferences names, else beside the
// input, else (a URL) the home folder. Outputs are always written on this computer.
QString defaultOutputFolder(const QString& input);

} // namespace ckpt::app
