// SPDX-License-Identifier: Apache-2.0
// Translations: every shipped language has every string the app shows — lupdate is run over the
// sources into a copy of each translations/tessera_<language>.ts, so a string added to the code
// and not translated fails here — with its placeholders and mnemonics intact; and the app loads
// the locale's language (the first page's button in Russian, a pause reason in German) and falls
// back to English.
#include "widgets/Translations.h"
#include "wizard/WelcomePage.h"

#include "manager/AppSettings.h"

#include <algorithm>

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>
#include <QXmlStreamReader>

using namespace Qt::StringLiterals;
using namespace tessera;

namespace {

struct Message {
    QString context;
    QString source;
    QStringList translations; // one, or each plural form of a numerus message
    QString type;             // "", "unfinished", "vanished", "obsolete"
};

QList<Message> readTs(const QString& path) {
    QList<Message> messages;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return messages;
    QXmlStreamReader xml(&file);
    QString context;
    Message m;
    while (!xml.atEnd()) {
        xml.readNext();
        if (!xml.isStartElement())
            continue;
        if (xml.name() == u"name")
            context = xml.readElementText();
        else if (xml.name() == u"message")
            m = Message{context, {}, {}, {}};
        else if (xml.name() == u"source")
            m.source = xml.readElementText();
        else if (xml.name() == u"translation") {
            m.type = xml.attributes().value(u"type"_s).toString();
            // A plural message holds one <numerusform> per form; each is checked on its own.
            QString text;
            while (!xml.atEnd()) {
                xml.readNext();
                if (xml.isCharacters())
                    text += xml.text();
                else if (xml.isStartElement() && xml.name() == u"numerusform")
                    m.translations << xml.readElementText();
                else if (xml.isEndElement() && xml.name() == u"translation")
                    break;
            }
            if (m.translations.isEmpty())
                m.translations << text;
            messages << m;
        }
    }
    return messages;
}

QStringList placeholders(const QString& text) {
    static const QRegularExpression re(u"%\\d+"_s);
    QStringList found;
    for (const QRegularExpressionMatch& m : re.globalMatch(text))
        found << m.captured();
    found.sort();
    return found;
}

int mnemonics(const QString& text) {
    static const QRegularExpression re(u"(?<!&)&(?!&)[\\p{L}\\p{N}]"_s);
    return int(text.count(re));
}

QStringList tsFiles() {
    return QDir(QStringLiteral(TESSERA_SOURCE_DIR "/translations"))
        .entryList({u"tessera_*.ts"_s}, QDir::Files);
}

} // namespace

class TestTranslations final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void germanAndRussianAreShipped() {
        QStringList shipped = ui::Translations::shipped();
        shipped.sort();
        QCOMPARE(shipped, (QStringList{u"de"_s, u"ru"_s}));
        QCOMPARE(tsFiles().size(), 2);
    }

    void everyShippedLanguageHasEveryString() {
        QTemporaryDir dir;
        for (const QString& name : tsFiles()) {
            // The sources as they are now, merged into a copy: a new string comes in unfinished.
            const QString copy = dir.filePath(name);
            QVERIFY(QFile::copy(QStringLiteral(TESSERA_SOURCE_DIR "/translations/") + name, copy));
            QProcess lupdate;
            lupdate.setWorkingDirectory(QStringLiteral(TESSERA_SOURCE_DIR));
            lupdate.start(QStringLiteral(TESSERA_LUPDATE),
                          {u"-locations"_s, u"none"_s, u"-no-obsolete"_s, u"-I"_s, u"core"_s, u"-I"_s,
                           u"ui"_s, u"ui"_s, u"core/manager"_s, u"app/tessera"_s, u"-ts"_s, copy});
            QVERIFY(lupdate.waitForFinished(120'000));
            QVERIFY2(lupdate.exitCode() == 0, lupdate.readAllStandardError().constData());
            const QList<Message> messages = readTs(copy);
            QVERIFY(messages.size() > 200);
            QStringList missing;
            for (const Message& m : messages)
                if (m.type == u"unfinished" ||
                    std::any_of(m.translations.cbegin(), m.translations.cend(),
                                [](const QString& t) { return t.trimmed().isEmpty(); }))
                    missing << m.context + u": "_s + m.source;
            QVERIFY2(missing.isEmpty(),
                     qPrintable(u"%1: %2 strings untranslated (run scripts/update-translations.sh, "
                                u"then translate them):\n"_s.arg(name)
                                    .arg(missing.size()) +
                                missing.join(u'\n')));
        }
    }

    void placeholdersAndMnemonicsSurvive() {
        for (const QString& name : tsFiles()) {
            QStringList broken;
            for (const Message& m : readTs(QStringLiteral(TESSERA_SOURCE_DIR "/translations/") + name)) {
                for (const QString& translation : m.translations) {
                    if (placeholders(m.source) != placeholders(translation))
                        broken << u"placeholders: "_s + m.source + u" → "_s + translation;
                    if (mnemonics(m.source) != mnemonics(translation))
                        broken << u"mnemonic: "_s + m.source + u" → "_s + translation;
                }
            }
            QVERIFY2(broken.isEmpty(), qPrintable(name + u":\n"_s + broken.join(u'\n')));
        }
    }

    void theAppSpeaksTheLocalesLanguage() {
        QTemporaryDir dir;
        manager::AppSettings settings(dir.filePath(u"tessera.ini"_s));
        QCOMPARE(ui::Translations::install(QLocale(u"ru_RU"_s)), u"ru"_s);
        {
            ui::WelcomePage page(settings);
            const QString contribute = page.findChild<QPushButton*>(u"contribute"_s)->text();
            QVERIFY2(contribute != u"&Contribute"_s && contribute.contains(QRegularExpression(u"[а-я]"_s)),
                     qPrintable(contribute));
        }
        QCOMPARE(ui::Translations::install(QLocale(u"de_DE"_s)), u"de"_s);
        const QString battery = QCoreApplication::translate("PauseReason", "on battery");
        QVERIFY2(!battery.isEmpty() && battery != u"on battery"_s, qPrintable(battery));
        // English, or a language not shipped: the source strings.
        for (const char* english : {"en_GB", "fr_FR"}) {
            QCOMPARE(ui::Translations::install(QLocale(QString::fromLatin1(english))), QString());
            ui::WelcomePage page(settings);
            QCOMPARE(page.findChild<QPushButton*>(u"contribute"_s)->text(), u"&Contribute"_s);
        }
    }
};

QTEST_MAIN(TestTranslations)
#include "test_translations.moc"
