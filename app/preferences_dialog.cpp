#include "preferences_dialog.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace ckpt::app {

namespace {

// A combo box of (shown text, stored value), the current value selected.
QComboBox* choices(const std::vector<std::pair<QString, QString>>& items, const QString& current,
                   QWidget* parent)
{
    auto* box = new QComboBox(parent);
    for (const auto& [text, value] : items)
        box->addItem(text, value);
    box->setCurrentIndex(std::max(0, box->findData(current)));
    return box;
}

QLabel* note(const QString& text, QWidget* parent)
{
    auto* l = new QLabel(text, parent);
    l->setWordWrap(true);
    l->setEnabled(false); // the palette's dimmed text: a remark, not a setting
    return l;
}

} // namespace

PreferencesDialog::PreferencesDialog(const Preferences& current, QWidget* parent) : QDialog(parent)
{
    setWindowTitle(tr("Preferences"));
    auto* general = new QFormLayout;
    m_palette = choices({{tr("System"), QStringLiteral("system")},
                         {tr("Light"), QStringLiteral("light")},
                         {tr("Dark"), QStringLiteral("dark")}},
                        current.palette, this);
    // Each language in its own words: someone who cannot read the current one still finds theirs.
    m_language = choices({{tr("System"), QString()},
                          {QStringLiteral("English"), QStringLiteral("en")},
                          {QStringLiteral("简体中文"), QStringLiteral("zh_CN")}},
                         current.language, this);
    m_device = choices({{tr("Automatic (the GPU where it is faster)"), QStringLiteral("auto")},
                        {tr("CPU"), QStringLiteral("cpu")},
                        {tr("CUDA GPU"), QStringLiteral("cuda")}},
                       current.device, this);
    m_output = new QLineEdit(current.outputFolder, this);
    m_output->setPlaceholderText(tr("Beside the checkpoint (the home folder for a URL)"));
    general->addRow(tr("Palette"), m_palette);
    general->addRow(tr("Language"), m_language);
    general->addRow(QString(), note(tr("Takes effect when Checkpoint Studio starts next."), this));
    general->addRow(tr("Output folder"), pathRow(m_output, false));
    general->addRow(tr("Compute device"), m_device);

    auto* remoteBox = new QGroupBox(tr("Remote storage"), this);
    auto* remote = new QFormLayout(remoteBox);
    remote->addRow(note(tr("Used for s3://, gs:// and hf:// URLs where the environment does not set "
                           "the variable: a window started from the desktop has no shell environment."),
                        remoteBox));
    for (const auto& v : remoteVariables()) {
        auto* field =
            new QLineEdit(current.remote.count(v.name) ? current.remote.at(v.name) : QString(), remoteBox);
        field->setPlaceholderText(QString::fromLatin1(v.name));
        m_remote[v.name] = field;
        remote->addRow(QCoreApplication::translate("Preferences", v.label), pathRow(field, v.file));
        auto* n = note(remoteNote(v.name), remoteBox);
        n->setEnabled(true); // not a remark: what the engine will use instead of the field
        n->setVisible(!n->text().isEmpty());
        m_notes[v.name] = n;
        remote->addRow(QString(), n);
    }

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    // Our words, translated with the rest (Qt's own translations are not loaded).
    buttons->button(QDialogButtonBox::Ok)->setText(tr("OK"));
    buttons->button(QDialogButtonBox::Cancel)->setText(tr("Cancel"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(general);
    layout->addWidget(remoteBox);
    layout->addStretch(1);
    layout->addWidget(buttons);
    resize(600, sizeHint().height());
}

QWidget* PreferencesDialog::pathRow(QLineEdit* field, bool file)
{
    auto* row = new QWidget(this);
    auto* h = new QHBoxLayout(row);
    h->setContentsMargins(0, 0, 0, 0);
    h->addWidget(field, 1);
    if (field != m_output && !file) return row;
    auto* browse = new QPushButton(tr("Browse..."), row);
    h->addWidget(browse);
    connect(browse, &QPushButton::clicked, this, [this, field, file] {
        const QString p = file ? QFileDialog::getOpenFileName(this, tr("Choose a file"), field->text())
                               : QFileDialog::getExistingDirectory(this, tr("Output folder"), field->text());
        if (!p.isEmpty()) field->setText(p);
    });
    return row;
}

QString PreferencesDialog::remoteNote(const std::string& variable) const
{
    const QByteArray set = qgetenv(variable.c_str());
    if (set.isNull()) return {};
    return tr("%1 is set in the environment (%2): it wins over this setting.")
        .arg(QString::fromStdString(variable), QString::fromLocal8Bit(set));
}

Preferences PreferencesDialog::chosen() const
{
    Preferences p;
    p.palette = m_palette->currentData().toString();
    p.language = m_language->currentData().toString();
    p.device = m_device->currentData().toString();
    p.outputFolder = m_output->text().trimmed();
    for (const auto& [name, field] : m_remote)
        p.remote[name] = field->text().trimmed();
    return p;
}

} // namespace ckpt::app
