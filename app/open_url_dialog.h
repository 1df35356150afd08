// File > Open URL...: a checkpoint on S3 or an HTTP(S) server, typed or picked from the URLs
// opened before (most recent first). What the engine cannot open (no scheme, a malformed URL,
// gs:// and hf:// today) is said under the field in the engine's own words, and Open stays off.
// A dumb dialog: the window opens what it accepted, as it opens a local path.
#pragma once

#include <QDialog>
#include <QStringList>

class QComboBox;
class QDialogButtonBox;
class QLabel;

namespace ckpt::app {

// Puts `item` first in the QSettings list `key`, keeping at most `bound` items.
void rememberRecent(const QString& key, const QString& item, int bound);

class OpenUrlDialog : public QDialog
{
    Q_OBJECT
public:
    explicit OpenUrlDialog(const QStringList& recent, QWidget* parent = nullptr);

    QString url() const; // as typed, without surrounding blanks
    void setUrl(const QString& url);
    // Why `url` cannot be opened, naming it; empty when it can (an empty URL has no problem to
    // show, and is not accepted either).
    static QString problemOf(const QString& url);
    QString problem() const { return problemOf(url()); }
    QComboBox* field() const { return m_url; }
    QDialogButtonBox* buttons() const { return m_buttons; }
    // Which credentials and endpoint the URL typed will use ("" for plain HTTP or no valid URL).
    QString source() const;

    // Recent URLs as QSettings keeps them: most recent first, at most kRecent.
    static constexpr int kRecent = 10;
    static QStringList recentUrls();
    static void addRecentUrl(const QString& url);

public slots:
    void accept() override; // only a URL the engine can open

private:
    void check();

    QComboBox* m_url;
    QLabel* m_problem;
    QLabel* m_source;
    QDialogButtonBox* m_buttons;
};

} // namespace ckpt::app
