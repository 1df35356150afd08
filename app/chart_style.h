// One look for the window's charts (the comparison's histograms, a run's training curves): the
// palette's base, text and grid colours, so light and dark themes both read.
#pragma once

class QChart;
class QPalette;

namespace ckpt::app {

void styleChart(QChart* chart, const QPalette& pal);

} // namespace ckpt::app
