// The one question every job dialog asks before writing into a folder that already holds files:
// replace what is there (the operation then swaps its new set in atomically and keeps files it
// did not write), or write nothing. Asked here, so that no dialog starts a job that the
// operation would refuse with a message meant for the command line.
#pragma once

#include <QString>

class QWidget;

namespace ckpt::app {

// How a dialog answers the question: ask with a message box (the default), or the answer given
// (tests, scripted use).
enum class ReplaceAnswer { Ask, Yes, No };

// Files held at any depth, as the operation counts them (empty folders and temporaries mix
// nothing); counting stops at `limit`.
int filesHeld(const QString& folder, int limit = 10000);

// True when `folder` holds no file, or the answer (asked when Ask) is to replace them.
bool mayReplace(QWidget* parent, const QString& folder, ReplaceAnswer answer);

} // namespace ckpt::app
