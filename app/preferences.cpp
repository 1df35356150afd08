#include "preferences.h"

#include "io/location.h"
#include "io/remote/aws_config.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QSettings>

namespace ckpt::app {

namespace {
const QString kPalette = QStringLiteral("palette"), kLanguage = QStringLiteral("language"),
              kOutput = QStringLiteral("outputFolder"), kDevice = QStringLiteral("device"),
              kRemote = QStringLiteral("remote/");
} // namespace

const std::vector<RemoteVariable>& remoteVariables()
{
    static const std::vector<RemoteVariable> v{
        {"AWS_ENDPOINT_URL", QT_TRANSLATE_NOOP("Preferences", "S3 endpoint URL"), false},
        {"AWS_PROFILE", QT_TRANSLATE_NOOP("Preferences", "AWS profile"), false},
        {"AWS_REGION", QT_TRANSLATE_NOOP("Preferences", "AWS region"), false},
        {"HF_ENDPOINT", QT_TRANSLATE_NOOP("Preferences", "Hugging Face endpoint"), false},
        {"HF_TOKEN_PATH", QT_TRANSLATE_NOOP("Preferences", "Hugging Face token file"), true},
        {"GOOGLE_APPLICATION_CREDENTIALS", QT_TRANSLATE_NOOP("Preferences", "Google credentials file"), true},
    };
    return v;
}

Preferences Preferences::load()
{
    QSettings s;
    Preferences p;
    p.palette = s.value(kPalette, p.palette).toString();
    p.language = s.value(kLanguage).toString();
    p.outputFolder = s.value(kOutput).toString();
    p.device = s.value(kDevice, p.device).toString();
    for (const auto& v : remoteVariables())
        p.remote[v.name] = s.value(kRemote + QLatin1String(v.name)).toString();
    return p;
}

void Preferences::save() const
{
    QSettings s;
    s.setValue(kPalette, palette);
    // Empty: the system's language (main.cpp reads the key; an empty value is no language).
    language.isEmpty() ? s.remove(kLanguage) : s.setValue(kLanguage, language);
    s.setValue(kOutput, outputFolder);
    s.setValue(kDevice, device);
    for (const auto& [name, value] : remote)
        s.setValue(kRemote + QString::fromStdString(name), value.trimmed());
}

void Preferences::applyRemote() const
{
    std::map<std::string, std::string> values;
    for (const auto& [name, value] : remote)
        if (!value.trimmed().isEmpty()) values[name] = value.trimmed().toStdString();
    io::remote::setEnvDefaults(std::move(values));
}

gpu::Device Preferences::computeDevice() const
{
    return device == QLatin1String("cpu")    ? gpu::Device::Cpu
           : device == QLatin1String("cuda") ? gpu::Device::Cuda
                                             : gpu::Device::Auto;
}

QString defaultOutputFolder(const QString& input)
{
    const QString chosen = Preferences::load().outputFolder;
    if (!chosen.isEmpty()) return chosen;
    return io::isRemotePath(input.toStdString()) ? QDir::homePath() : QFileInfo(input).absolutePath();
}

} // namespace ckpt::app
