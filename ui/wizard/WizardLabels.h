// SPDX-License-Identifier: Apache-2.0
#pragma once
// The first-run wizard's text styles: a page's title and its body text.

#include <QLabel>

namespace tessera::ui {

inline QLabel* titleLabel(const QString& text) {
    auto* label = new QLabel(text);
    QFont f = label->font();
    f.setPointSizeF(f.pointSizeF() * 1.4);
    f.setBold(true);
    label->setFont(f);
    label->setWordWrap(true);
    return label;
}

inline QLabel* bodyLabel(const QString& text = {}) {
    auto* label = new QLabel(text);
    label->setWordWrap(true);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return label;
}

} // namespace tessera::ui
