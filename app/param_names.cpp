#include "param_names.h"

#include "layout/sharding.h"

#include <QStringList>
#include <algorithm>

namespace ckpt::app {

LayerName splitLayer(const QString& name)
{
    const layout::LayerName l = layout::splitLayer(name.toStdString());
    return {l.isLayer, QString::fromStdString(l.stem), QString::fromStdString(l.rest), l.number};
}

QString elideName(const QString& name, const std::function<int(const QString&)>& width, int available)
{
    if (width(name) <= available) return name;
    static const QString dots = QString(QChar(0x2026));
    const QStringList seg = name.split(QLatin1Char('.'));
    // The layer number (the first segment that is a number) and the word before it stay.
    qsizetype number = -1;
    for (qsizetype i = 0; i < seg.size() && number < 0; ++i) {
        bool isNumber = false;
        seg[i].toLongLong(&isNumber);
        if (isNumber) number = i;
    }
    const qsizetype keepFrom = number > 0 ? number - 1 : std::max<qsizetype>(seg.size() - 1, 0);
    for (qsizetype k = 1; k <= keepFrom; ++k) { // 1: leading segments, whole
        const QString c = dots + seg.mid(k).join(QLatin1Char('.'));
        if (width(c) <= available) return c;
    }
    if (number >= 0) { // 2: "…layers.17.…" and as many of the last segments as fit
        // The last two segments say which tensor of the layer it is ("gate_proj.weight", not
        // "weight", which every projection ends in): the word before the number goes before they do.
        const qsizetype want = std::min<qsizetype>(2, seg.size() - 1 - number);
        QString fewer;
        for (const qsizetype from : {keepFrom, number}) {
            const QString head =
                dots + seg.mid(from, number - from + 1).join(QLatin1Char('.')) + QLatin1Char('.');
            QString best;
            qsizetype kept = 0;
            for (qsizetype t = seg.size() - 1; t > number; --t) {
                const QString c =
                    head + (t > number + 1 ? dots : QString()) + seg.mid(t).join(QLatin1Char('.'));
                if (width(c) > available) break;
                best = c, kept = seg.size() - t;
            }
            if (!best.isEmpty() && kept >= want) return best;
            if (fewer.isEmpty()) fewer = best;
        }
        if (!fewer.isEmpty()) return fewer;
    }
    // 3: the end, character by character (the last segment says what the tensor is).
    QString tail = name;
    while (!tail.isEmpty() && width(dots + tail) > available)
        tail.remove(0, 1);
    return dots + tail;
}

} // namespace ckpt::app
