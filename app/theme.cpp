#include "theme.h"

#include <QApplication>
#include <QGuiApplication>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>
#include <QStyleHints>

namespace ckpt::app {

namespace {

// Fusion's colours for a dark desktop, matched to the light palette's contrast.
QPalette darkPalette()
{
    const QColor window(0x2b, 0x2d, 0x31), base(0x1e, 0x1f, 0x22), button(0x35, 0x37, 0x3c),
        text(0xe8, 0xe8, 0xe8), dimmed(0x7c, 0x80, 0x88), highlight(0x35, 0x74, 0xc9);
    QPalette p;
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, QColor(0x26, 0x28, 0x2c));
    p.setColor(QPalette::ToolTipBase, button);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, dimmed);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, button);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, QColor(0xff, 0x6b, 0x6b));
    p.setColor(QPalette::Light, QColor(0x4a, 0x4d, 0x54));
    p.setColor(QPalette::Midlight, QColor(0x3d, 0x40, 0x46));
    p.setColor(QPalette::Mid, QColor(0x24, 0x26, 0x29));
    p.setColor(QPalette::Dark, QColor(0x1a, 0x1b, 0x1e));
    p.setColor(QPalette::Shadow, QColor(0x0c, 0x0c, 0x0e));
    p.setColor(QPalette::Highlight, highlight);
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, QColor(0x6c, 0xb0, 0xff));
    p.setColor(QPalette::LinkVisited, QColor(0xb3, 0x8c, 0xff));
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, dimmed);
    p.setColor(QPalette::Disabled, QPalette::Highlight, QColor(0x4a, 0x4d, 0x54));
    return p;
}

} // namespace

bool applyPalette(const QString& which)
{
    if (which == QLatin1String("light") || which == QLatin1String("dark")) {
        QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
        QApplication::setPalette(which == QLatin1String("dark") ? darkPalette()
                                                                : QApplication::style()->standardPalette());
        return true;
    }
#if QT_VERSION >= QT_VERSION_CHECK(6, 5, 0)
    // A dark desktop whose platform theme still hands out light colours (no GTK/KDE theme plugin).
    if (QGuiApplication::styleHints()->colorScheme() == Qt::ColorScheme::Dark &&
        QApplication::palette().color(QPalette::Window).lightness() > 128)
        return applyPalette(QStringLiteral("dark"));
#endif
    return which == QLatin1String("system");
}

} // namespace ckpt::app
