#include "chart_style.h"

#include <QAbstractAxis>
#include <QChart>
#include <QLegend>
#include <QPalette>

namespace ckpt::app {

void styleChart(QChart* chart, const QPalette& pal)
{
    chart->setBackgroundBrush(pal.color(QPalette::Base));
    chart->setPlotAreaBackgroundVisible(false);
    chart->legend()->setLabelColor(pal.color(QPalette::Text));
    chart->setTitleBrush(pal.color(QPalette::Text));
    for (QAbstractAxis* a : chart->axes()) {
        a->setLabelsColor(pal.color(QPalette::Text));
        a->setLinePenColor(pal.color(QPalette::Mid));
        a->setGridLineColor(pal.color(QPalette::Midlight));
        a->setTitleBrush(pal.color(QPalette::Text));
    }
}

} // namespace ckpt::app
