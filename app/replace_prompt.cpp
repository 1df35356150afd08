#include "replace_prompt.h"

#include "io/output.h"

#include <QCoreApplication>
#include <QDir>
#include <QMessageBox>

namespace ckpt::app {

int filesHeld(const QString& folder, int limit)
{
    // The operation's own rule (io::filesHeld), so the question is asked exactly when the
    // operation would refuse.
    return int(io::filesHeld(folder.toStdString(), size_t(limit)).size());
}

bool mayReplace(QWidget* parent, const QString& folder, ReplaceAnswer answer)
{
    const int held = filesHeld(folder);
    if (held == 0) return true;
    if (answer != ReplaceAnswer::Ask) return answer == ReplaceAnswer::Yes;
    const QString text =
        QCoreApplication::translate("ReplacePrompt",
                                    "%1 already holds %n file(s). Replace the earlier output in it?\n\n"
                                    "The files it wrote are removed and the new ones put in their place "
                                    "in one step; other files are kept.",
                                    nullptr, held)
            .arg(QDir::toNativeSeparators(folder));
    return QMessageBox::question(parent, QCoreApplication::translate("ReplacePrompt", "Replace the output?"),
                                 text, QMessageBox::Yes | QMessageBox::Cancel,
                                 QMessageBox::Cancel) == QMessageBox::Yes;
}

} // namespace ckpt::app
