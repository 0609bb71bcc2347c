// SPDX-License-Identifier: Apache-2.0
#include "widgets/AboutBox.h"

#include "common/Version.h"

using namespace Qt::StringLiterals;

namespace tessera::ui {

AboutBox::AboutBox(QWidget* parent)
    : QMessageBox(parent) {
    setObjectName(u"about"_s);
    setWindowTitle(tr("About Tessera"));
    setIcon(QMessageBox::Information);
    setTextFormat(Qt::RichText);
    setText(tr("<b>Tessera %1</b><p>Lend your GPU to the training of a large language model.</p>")
                .arg(tesseraVersion().toHtmlEscaped()));
    setInformativeText(
        tr("<p>Copyright 2026 The Tessera contributors.</p>"
           "<p>Tessera is free software, licensed under the "
           "<a href=\"https://www.apache.org/licenses/LICENSE-2.0\">Apache License, Version 2.0</a>. "
           "It comes with no warranty.</p>"
           "<p>It uses Qt %1 (LGPLv3) and LibTorch (BSD), each under its own licence.</p>")
            .arg(QString::fromLatin1(qVersion()).toHtmlEscaped()));
    setStandardButtons(QMessageBox::Close);
    setDefaultButton(QMessageBox::Close);
    setEscapeButton(QMessageBox::Close);
}

} // namespace tessera::ui
