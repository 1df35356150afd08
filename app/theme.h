// The window's palettes: the desktop's ("system"), or Fusion with our light or dark colours.
// Shared by the application and the tools that take its screenshots.
#pragma once

#include <QString>

namespace ckpt::app {

// "system" leaves style and palette to the platform theme, which follows the desktop (GTK or KDE
// colours, light or dark); "light" and "dark" force Fusion with that palette. False for any other
// name.
bool applyPalette(const QString& which);

} // namespace ckpt::app
