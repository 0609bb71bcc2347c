// SPDX-License-Identifier: Apache-2.0
// Translations: QTranslators for the app's and Qt's strings, from the locale's UI languages.
#include "widgets/Translations.h"

#include <QCoreApplication>
#include <QDir>
#include <QLibraryInfo>
#include <QRegularExpression>
#include <QTranslator>

#include <memory>

namespace tessera::ui {

namespace {

// The translators in effect (owned here; QCoreApplication only keeps pointers).
std::unique_ptr<QTranslator>& appTranslator() {
    static std::unique_ptr<QTranslator> t;
    return t;
}

std::unique_ptr<QTranslator>& qtTranslator() {
    static std::unique_ptr<QTranslator> t;
    return t;
}

void remove(std::unique_ptr<QTranslator>& t) {
    if (t)
        QCoreApplication::removeTranslator(t.get());
    t.reset();
}

} // namespace

QStringList Translations::shipped() {
    QStringList languages;
    static const QRegularExpression name(QStringLiteral("^tessera_([a-z]{2,3}(?:_[A-Z]{2})?)\\.qm$"));
    for (const QString& file : QDir(QStringLiteral(":/i18n")).entryList(QDir::Files))
        if (const QRegularExpressionMatch m = name.match(file); m.hasMatch())
            languages << m.captured(1);
    return languages;
}

QString Translations::install(const QLocale& locale) {
    remove(appTranslator());
    remove(qtTranslator());
    auto app = std::make_unique<QTranslator>();
    // Tries each of the locale's UI languages in turn (e.g. "ru-RU", then "ru"); English first
    // means English.
    if (locale.language() == QLocale::English || locale.language() == QLocale::C ||
        !app->load(locale, QStringLiteral("tessera"), QStringLiteral("_"), QStringLiteral(":/i18n")))
        return {};
    QCoreApplication::installTranslator(app.get());
    const QString language = app->language().section(u'_', 0, 0);
    appTranslator() = std::move(app);
    auto qt = std::make_unique<QTranslator>();
    if (qt->load(locale, QStringLiteral("qtbase"), QStringLiteral("_"),
                 QLibraryInfo::path(QLibraryInfo::TranslationsPath))) {
        QCoreApplication::installTranslator(qt.get());
        qtTranslator() = std::move(qt);
    }
    return language;
}

} // namespace tessera::ui
