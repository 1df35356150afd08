// The window on a large checkpoint, as a user meets it: open it (progress, cancelable), select
// its tag (overview and sharding map), zoom the map and move the mouse over it. Measures the
// open time, how many progress reports arrived, the longest the event loop went without
// running (a 2 ms timer's largest gap) in each phase, and the map's paint times per zoom level.
// Prints a Markdown table. Usage: bench_gui CHECKPOINT [TAG]   (QT_QPA_PLATFORM=offscreen)
#include "main_window.h"
#include "sharding_map.h"
#include "stall_meter.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QMouseEvent>
#include <QTimer>
#include <algorithm>
#include <cstdio>

using namespace ckpt;

namespace {

// Runs the event loop for `ms` (so the meter sees what the window does meanwhile).
void spin(int ms)
{
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
}

} // namespace

int main(int argc, char** argv)
{
    QApplication qapp(argc, argv);
    if (argc < 2) {
        std::fprintf(stderr, "usage: bench_gui CHECKPOINT [TAG]\n");
        return 2;
    }
    const QString path = QString::fromLocal8Bit(argv[1]);
    app::MainWindow w;
    w.resize(1600, 1000);
    w.show();
    testutil::StallMeter meter;
    spin(200);
    meter.reset();

    int reports = 0, lastPermille = 0;
    QObject::connect(&w, &app::MainWindow::openProgressed, [&](int permille, const QString&) {
        ++reports;
        lastPermille = permille;
    });
    bool ok = false;
    QEventLoop opened;
    QObject::connect(&w, &app::MainWindow::loaded, [&](bool success) {
        ok = success;
        opened.quit();
    });
    QElapsedTimer clock;
    clock.start();
    w.open(path);
    opened.exec();
    const double openS = double(clock.elapsed()) / 1000;
    const qint64 openStall = meter.reset();
    if (!ok) {
        std::fprintf(stderr, "bench_gui: %s did not open\n", argv[1]);
        return 1;
    }

    const QString tag = argc > 2 ? QString::fromLocal8Bit(argv[2]) : QStringLiteral("global_step4");
    clock.restart();
    if (!w.select(tag)) {
        std::fprintf(stderr, "bench_gui: no tag %s in the tree\n", argv[2] ? argv[2] : "global_step4");
        return 1;
    }
    spin(500);
    const double selectS = double(clock.elapsed() - 500) / 1000;
    const qint64 selectStall = meter.reset();

    auto* map = w.findChild<app::ShardingMap*>();
    if (!map || !map->isVisible()) {
        std::fprintf(stderr, "bench_gui: the tag shows no sharding map\n");
        return 1;
    }
    std::printf("| phase | wall s | longest event-loop stall ms | notes |\n|---|---:|---:|---|\n");
    std::printf("| open | %.2f | %lld | %d progress reports, last %.1f%% |\n", openS, (long long)openStall,
                reports, lastPermille / 10.0);
    std::printf("| select tag (overview + map) | %.2f | %lld | map %dx%d px |\n", std::max(0.0, selectS),
                (long long)selectStall, map->width(), map->height());
    // Zoomed in and out, centred at a few places: each paint as the user scrolls.
    for (const double zoom : {1.0, 8.0, 64.0, 512.0}) {
        qint64 worst = 0, total = 0;
        int n = 0;
        for (const double center : {0.1, 0.5, 0.9}) {
            map->setZoom(zoom, center);
            QElapsedTimer t;
            t.start();
            map->repaint();
            const qint64 ms = t.elapsed();
            worst = std::max(worst, ms), total += ms, ++n;
        }
        std::printf("| map paint, zoom %gx | %.3f | %lld | worst of 3 centres; mean %.1f ms |\n", zoom,
                    double(total) / 1000, (long long)worst, double(total) / n);
    }
    // The mouse across the map (hover names the parameter under it).
    meter.reset();
    clock.restart();
    for (int i = 0; i < 200; ++i) {
        const QPointF at(map->width() * (i + 0.5) / 200.0, map->height() * ((i * 7) % 10 + 0.5) / 10.0);
        QMouseEvent move(QEvent::MouseMove, at, map->mapToGlobal(at), Qt::NoButton, Qt::NoButton,
                         Qt::NoModifier);
        QApplication::sendEvent(map, &move);
        QApplication::processEvents();
    }
    std::printf("| 200 hover moves | %.2f | %lld | |\n", double(clock.elapsed()) / 1000,
                (long long)meter.reset());
    return 0;
}
