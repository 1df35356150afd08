// Kind texts come from the model library as data; listing them here lets lupdate extract them
// so tr() in the tree model and details pane finds their translations.
#include <QtGlobal>

namespace {
[[maybe_unused]] const char* const kKindTexts[] = {
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "DeepSpeed checkpoint"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "configuration"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "rank files"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "tag"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "tag (latest)"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "ds_config"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "files"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "parameters"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "parameter"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "parameter (frozen)"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "tied parameter"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "buffer"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "optimizer state"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "tensor"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "model states"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "optimizer states"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "pipeline layer"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "MoE expert"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "MoE expert optimizer"),
    QT_TRANSLATE_NOOP("ckpt::app::TreeModel", "other"),
    QT_TRANSLATE_NOOP("ckpt::app::DetailsPane", "DeepSpeed checkpoint"),
    QT_TRANSLATE_NOOP("ckpt::app::DetailsPane", "tag"),
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
    QT_TRANSLATE_NOOP("ckpt::app::DetailsPane", "model states"),
    QT_TRANSLATE_NOOP("ckpt::app::DetailsPane", "optimizer states"),
};
} // namespace
