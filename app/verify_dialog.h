// Verify...: `ckpt verify` on the open checkpoint (or a file), as a job with progress and cancel:
// a table of every file checked (its format, whole / damaged with the reason / not covered by a
// checksum) and what is wrong beyond one file's bytes (a tag its family cannot read whole).
#pragma once

#include "operation_panel.h"
#include "ops/verify.h"

#include <QDialog>
#include <optional>

class QCheckBox;
class QLabel;
class QTableWidget;

namespace ckpt::app {

class Workspace;

class VerifyDialog : public QDialog
{
    Q_OBJECT
public:
    // `tag`: the tag verified unless all are asked for (empty: the one `latest` names).
    VerifyDialog(const QString& path, const QString& tag, QWidget* parent = nullptr,
                 Workspace* workspace = nullptr);

    void setAllTags(bool all);
    void start();
    bool running() const;
    // The last run's report (none before one ended, or when it failed or was cancelled).
    const std::optional<ops::VerifyReport>& report() const { return m_report; }
    QString status() const;

signals:
    void finished(bool whole);

protected:
    void reject() override;

private:
    void onFinished(const JobResult<ops::VerifyReport>& r);
    void fillTable(const ops::VerifyReport& r);

    QString m_path, m_tag;
    QCheckBox* m_allTags;
    QLabel* m_problems;
    QTableWidget* m_table;
    OperationPanel* m_panel;
    std::optional<ops::VerifyReport> m_report;
};

} // namespace ckpt::app
