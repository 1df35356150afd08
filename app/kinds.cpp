// Node kinds in the window. The window's own kind texts (a tag, its rank files, a parameter) are
// listed here for lupdate; a family's words (its name, file roles, facts) are marked where
// model/layout defines them (layout/words.h) and found by wordText().
// kindIcon() gives each kind its icon in the tree.
#include "snapshot.h"

#include <QGuiApplication>
#include <QHash>
#include <QIcon>
#include <QPainter>
#include <QPalette>
#include <QPixmap>
#include <QtGlobal>

namespace {
[[maybe_unused]] const char* const kKindTexts[] = {
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "torch-zip file"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "torch-legacy file"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "safetensors file"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "configuration"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "rank files"), QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "tag"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "tag (latest)"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "tag (cannot be read)"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "ds_config"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "files"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "parameters"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "parameter"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "parameter (frozen)"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "tied parameter"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "buffer"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "optimizer state"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "tensor"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "other tensors"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "other tensor"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "folder"), QT_TRANSLATE_NOOP("ckpt::app::DetailsPane", "tag"),
    QT_TRANSLATE_NOOP("ckpt::app::DetailsPane", "tag (latest)"),
    QT_TRANSLATE_NOOP("ckpt::app::DetailsPane", "ds_config"),
    QT_TRANSLATE_NOOP("ckpt::app::DetailsPane", "files"),
    QT_TRANSLATE_NOOP("ckpt::app::DetailsPane", "parameters"),
    QT_TRANSLATE_NOOP("ckpt::app::DetailsPane", "parameter"),
    QT_TRANSLATE_NOOP("ckpt::app::DetailsPane", "parameter (frozen)"),
    QT_TRANSLATE_NOOP("ckpt::app::DetailsPane", "tied parameter"),
    QT_TRANSLATE_NOOP("ckpt::app::DetailsPane", "buffer"),
    QT_TRANSLATE_NOOP("ckpt::app::DetailsPane", "optimizer state"),
    QT_TRANSLATE_NOOP("ckpt::app::DetailsPane", "tensor"),
    QT_TRANSLATE_NOOP("ckpt::app::DetailsPane", "other tensor"),
    // Facts the families state about a tag (layout::Fact labels, and values that are words).
    QT_TRANSLATE_NOOP("ckpt::app::Fact", "role"), QT_TRANSLATE_NOOP("ckpt::app::Fact", "data-parallel rank"),
    QT_TRANSLATE_NOOP("ckpt::app::Fact", "tensor-parallel rank"),
    // A Hugging Face Trainer checkpoint (trainer_family.cpp), and DeepSpeed's pipeline and MoE.
};
} // namespace

namespace ckpt::app {

QString wordText(const char* context, const std::string& word)
{
    const QString own = QCoreApplication::translate(context, word.c_str());
    if (own != QString::fromUtf8(word.c_str())) return own;
    return QCoreApplication::translate("ckpt::layout", word.c_str());
}

} // namespace ckpt::app

// The tree's node-kind icons (Qt::DecorationRole of the name column): the desktop's icon theme
// where a standard name fits, else ours from resources/icons/kinds (16 and 32 px for high DPI).
namespace ckpt::app {

namespace {

const char* iconName(const Node& n)
{
    switch (n.kind) {
    case NodeKind::Checkpoint:
        return "checkpoint";
    case NodeKind::Tag:
        if (n.kindText == "tag (cannot be read)") return "warning";
        return n.kindText == "tag (latest)" ? "tag-latest" : "tag";
    case NodeKind::Config:
        return "config";
    case NodeKind::Group:
        return "folder";
    case NodeKind::RankFile:
        return n.error.empty() ? "rank-file" : "warning";
    case NodeKind::Parameter:
        if (n.kindText == "buffer") return "buffer";
        if (n.kindText == "optimizer state") return "optimizer-state";
        if (n.kindText == "other tensor") return "tensor";
        return n.kindText == "parameter (frozen)" ? "frozen" : "parameter";
    case NodeKind::Tensor:
        return "tensor";
    case NodeKind::Entry:
        if (n.kindText == "folder") return "folder";
        return n.kindText == "optimizer state" ? "optimizer-state" : "entry";
    }
    return "entry";
}

} // namespace

QIcon kindIcon(const Node& n)
{
    static QHash<QString, QIcon> cache; // GUI thread only, as every model call
    const QString name = QLatin1String(iconName(n));
    auto it = cache.find(name);
    if (it == cache.end()) {
        // Selected rows show the icon's shape in the highlighted-text colour, as Breeze does: our
        // blue icons would vanish on a blue highlight.
        const QColor selected = QGuiApplication::palette().color(QPalette::HighlightedText);
        QIcon ours;
        for (const char* suffix : {"", "@2x"}) {
            const QPixmap pixmap(QStringLiteral(":/icons/kinds/%1%2.png").arg(name, QLatin1String(suffix)));
            QPixmap shape = pixmap;
            QPainter painter(&shape);
            painter.setCompositionMode(QPainter::CompositionMode_SourceIn);
            painter.fillRect(shape.rect(), selected);
            painter.end();
            ours.addPixmap(pixmap, QIcon::Normal);
            ours.addPixmap(shape, QIcon::Selected);
        }
        // Standard names (freedesktop icon naming specification) for the kinds that have one.
        const QString theme = name == QLatin1String("folder")    ? QStringLiteral("folder")
                              : name == QLatin1String("warning") ? QStringLiteral("dialog-warning")
                                                                 : QString();
        it = cache.insert(name, theme.isEmpty() ? ours : QIcon::fromTheme(theme, ours));
    }
    return *it;
}

} // namespace ckpt::app
