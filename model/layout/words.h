// The words a family states for people (its display name, file roles, fact labels and the values
// that are words) are marked where they are defined: lupdate, run over model/layout as well as
// app/, extracts them in the one context "ckpt::layout", and the window translates them there
// (app::modelWord). The model has no Qt, so the mark is the text itself.
#pragma once

#ifndef QT_TRANSLATE_NOOP
#define QT_TRANSLATE_NOOP(scope, text) text
#endif
