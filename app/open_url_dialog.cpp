#include "open_url_dialog.h"

#include "io/error.h"
#include "io/location.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QVBoxLayout>

namespace ckpt::app {

namespace {
const QString kRecentKey = QStringLiteral("recentUrls");
} // namespace

OpenUrlDialog::OpenUrlDialog(const QStringList& recent, QWidget* parent) : QDialog(parent)
{
    setWindowTitle(tr("Open URL"));
    auto* layout = new QVBoxLayout(this);
    auto* intro =
        new QLabel(tr("A checkpoint folder or file on S3, Google Cloud Storage, the Hugging Face Hub or "
                      "an HTTP(S) server. Only the bytes the window needs are read; credentials and "
                      "endpoints come from the environment (AWS_*, GS_* or GOOGLE_OAUTH_ACCESS_TOKEN, "
                      "HF_TOKEN), else from File > Preferences, else the usual files (~/.aws, gcloud, "
                      "~/.cache/huggingface)."),
                   this);
    intro->setWordWrap(true);
    // Editable, the recent URLs below it: typing one is as quick as picking one.
    m_url = new QComboBox(this);
    m_url->setEditable(true);
    m_url->setInsertPolicy(QComboBox::NoInsert);
    m_url->addItems(recent);
    m_url->setCurrentIndex(-1);
    m_url->lineEdit()->setPlaceholderText(
        tr("s3://bucket/run/global_step100 or https://host/model.safetensors"));
    m_url->setMinimumContentsLength(48);
    m_problem = new QLabel(this);
    m_problem->setWordWrap(true);
    m_problem->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_problem->setStyleSheet(QStringLiteral("QLabel { color: #c62828; }"));
    // Room for the message kept whether or not there is one: the dialog does not jump (or squeeze
    // the text above) as the user types.
    m_problem->setMinimumHeight(2 * m_problem->fontMetrics().lineSpacing());
    m_problem->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    // Which credentials and endpoint a valid URL will use: a wrong profile or a missing endpoint
    // shows before anything is asked of a server.
    m_source = new QLabel(this);
    m_source->setWordWrap(true);
    m_source->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_source->setEnabled(false);
    m_buttons = new QDialogButtonBox(QDialogButtonBox::Open | QDialogButtonBox::Cancel, this);
    // Our words, translated with the rest (Qt's own translations are not loaded).
    m_buttons->button(QDialogButtonBox::Open)->setText(tr("Open"));
    m_buttons->button(QDialogButtonBox::Cancel)->setText(tr("Cancel"));
    layout->addWidget(intro);
    layout->addWidget(m_url);
    layout->addWidget(m_problem);
    layout->addWidget(m_source);
    layout->addStretch(1);
    layout->addWidget(m_buttons);
    connect(m_buttons, &QDialogButtonBox::accepted, this, &OpenUrlDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_url, &QComboBox::currentTextChanged, this, &OpenUrlDialog::check);
    check();
}

QString OpenUrlDialog::url() const
{
    return m_url->currentText().trimmed();
}

void OpenUrlDialog::setUrl(const QString& url)
{
    m_url->setCurrentText(url);
}

QString OpenUrlDialog::problemOf(const QString& url)
{
    if (url.isEmpty()) return {};
    if (const std::string meant = io::meantUrl(url.toStdString()); !meant.empty())
        return tr("%1 is not a URL as written: did you mean %2 ?").arg(url, QString::fromStdString(meant));
    if (!io::isRemotePath(url.toStdString()))
        return tr("%1 is not a URL: use s3://BUCKET/KEY, gs://BUCKET/KEY, hf://ORG/REPO/PATH or "
                  "https://HOST/PATH")
            .arg(url);
    try {
        io::checkRemoteUrl(url.toStdString());
    } catch (const Error& e) {
        return QString::fromStdString(e.what()); // the engine's words, naming the URL
    }
    return {};
}

QString OpenUrlDialog::source() const
{
    return m_source->text();
}

void OpenUrlDialog::check()
{
    const QString why = problem();
    m_problem->setText(why);
    m_source->setText(why.isEmpty() && !url().isEmpty()
                          ? QString::fromStdString(io::remoteSourceOf(url().toStdString()))
                          : QString());
    m_buttons->button(QDialogButtonBox::Open)->setEnabled(!url().isEmpty() && why.isEmpty());
}

void OpenUrlDialog::accept()
{
    check();
    if (url().isEmpty() || !problem().isEmpty()) return;
    QDialog::accept();
}

QStringList OpenUrlDialog::recentUrls()
{
    return QSettings().value(kRecentKey).toStringList();
}

void OpenUrlDialog::addRecentUrl(const QString& url)
{
    rememberRecent(kRecentKey, url, kRecent);
}

void rememberRecent(const QString& key, const QString& item, int bound)
{
    QSettings s;
    QStringList r = s.value(key).toStringList();
    r.removeAll(item);
    r.prepend(item);
    while (r.size() > bound)
        r.removeLast();
    s.setValue(key, r);
}

} // namespace ckpt::app
