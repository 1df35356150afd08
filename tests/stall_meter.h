// How long the GUI thread was unavailable: the longest gap between 2 ms timer ticks. The GUI
// tests check, with CKPT_VERIFY_RESPONSIVE, that the meter ticked and that no gap while the
// window opened, exported, slimmed or analysed reached a hang: a detector, not a speed claim.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>
#include <algorithm>

namespace testutil {

// A GUI thread away this long is hung, however loaded the machine running the tests.
constexpr qint64 kHangMs = 2000;

class StallMeter : public QObject
{
public:
    StallMeter()
    {
        m_timer.setInterval(2);
        connect(&m_timer, &QTimer::timeout, this, [this] {
            m_longest = std::max(m_longest, m_clock.restart());
            ++m_samples;
        });
        m_clock.start();
        m_timer.start();
    }
    qint64 longest() const { return m_longest; }
    int samples() const { return m_samples; }
    // The longest gap since the last reset (the one still open included), and a fresh start:
    // bench/gui measures each phase of the window this way.
    qint64 reset()
    {
        const qint64 l = std::max(m_longest, m_clock.elapsed());
        m_longest = 0;
        m_samples = 0;
        m_clock.restart();
        return l;
    }

private:
    QTimer m_timer;
    QElapsedTimer m_clock;
    qint64 m_longest = 0;
    int m_samples = 0;
};

} // namespace testutil

// No gap between ticks reached a hang. A job quicker than one tick is measured by the gap that
// ends at the first tick (from the meter's start), so at least one tick is waited for.
#define CKPT_VERIFY_RESPONSIVE(meter)                                                                        \
    do {                                                                                                     \
        QTRY_VERIFY2_WITH_TIMEOUT((meter).samples() > 0, "the stall meter never ticked", testutil::kHangMs); \
        QVERIFY2((meter).longest() < testutil::kHangMs,                                                      \
                 qPrintable(QStringLiteral("the GUI thread stalled for %1 ms").arg((meter).longest())));     \
    } while (false)
