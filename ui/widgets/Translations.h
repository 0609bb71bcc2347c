// SPDX-License-Identifier: Apache-2.0
#pragma once
// Translations: the app in the user's language. The .qm files built from translations/*.ts are
// embedded under :/i18n; the first of the locale's UI languages that Tessera ships is loaded
// (German and Russian today; English, the source language, needs none), with Qt's own strings
// (standard dialogs' buttons) from Qt's translations when they are installed.

#include <QLocale>
#include <QString>
#include <QStringList>

namespace tessera::ui {

class Translations {
public:
    // The languages shipped besides English ("de", "ru"), from the embedded files.
    static QStringList shipped();
    // Installs the translators for `locale` on the application; returns the language loaded
    // ("ru"), or "" for English (none shipped for the locale, or English asked for). Calling it
    // again replaces the translators installed before.
    static QString install(const QLocale& locale = QLocale::system());
};

} // namespace tessera::ui
