// `checkpoint-studio --bloat PATH`: the window with the Bloat view of PATH (a file or any folder,
// a checkpoint or not). For docs and tests: with a window screenshot file it saves the window
// once the view is computed, with a slim screenshot file it runs the Slim dialog on PATH into a
// temporary folder and saves the dialog when done; then it exits. Kept out of main.cpp so that
// file stays the thin entry point.
#pragma once

#include <QString>

namespace ckpt::app {

class MainWindow;

// Runs the event loop; returns the exit code. `treePath` (optional) is opened in the tree
// instead of PATH.
int runBloatMode(MainWindow& window, const QString& path, const QString& windowShot, const QString& slimShot,
                 const QString& treePath);

} // namespace ckpt::app
