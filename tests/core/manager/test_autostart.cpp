// SPDX-License-Identifier: Apache-2.0
// Autostart on Linux, in a temporary $XDG_CONFIG_HOME: enabling writes a desktop entry that
// desktop-file-validate accepts and whose Exec line parses back (by the spec's rules) to the
// program, even one whose path holds spaces, quotes, `$` and `%`; disabling removes it; an entry
// turned off in the desktop's settings reads as off; without $XDG_CONFIG_HOME it goes to
// ~/.config; a program that is not there is refused before anything is written, and a folder
// that cannot be made is a clear error.
#include "manager/Autostart.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

using namespace tessera;
using namespace tessera::manager;

namespace {

// The Exec key's arguments, read as a launcher reads them: string escapes first, then quoting,
// then `%%` as a literal `%`.
QStringList parseExec(const QString& value) {
    QString unescaped;
    for (qsizetype i = 0; i < value.size(); ++i) {
        if (value[i] == u'\\' && i + 1 < value.size()) {
            const QChar c = value[++i];
            unescaped += c == u's' ? u' ' : c == u'n' ? u'\n' : c == u't' ? u'\t' : c == u'r' ? u'\r' : c;
        } else {
            unescaped += value[i];
        }
    }
    QStringList arguments;
    QString current;
    bool inQuotes = false;
    bool started = false;
    for (qsizetype i = 0; i < unescaped.size(); ++i) {
        const QChar c = unescaped[i];
        if (inQuotes && c == u'\\' && i + 1 < unescaped.size()) {
            current += unescaped[++i];
        } else if (c == u'"') {
            inQuotes = !inQuotes;
            started = true;
        } else if (c == u' ' && !inQuotes) {
            if (started)
                arguments.append(current);
            current.clear();
            started = false;
        } else if (c == u'%' && i + 1 < unescaped.size() && unescaped[i + 1] == u'%') {
            current += u'%';
            ++i;
            started = true;
        } else {
            current += c;
            started = true;
        }
    }
    if (started)
        arguments.append(current);
    return arguments;
}

// The value of key in the entry's [Desktop Entry] group.
QString entryValue(const QString& path, const QString& key) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly | QIODevice::Text))
        return {};
    const QStringList lines = QString::fromUtf8(file.readAll()).split(u'\n');
    for (const QString& line : lines) {
        if (line.startsWith(key + u'='))
            return line.mid(key.size() + 1);
    }
    return {};
}

bool makeExecutable(const QString& path) {
    QFile file(path);
    if (!QDir().mkpath(QFileInfo(path).absolutePath()) || !file.open(QIODevice::WriteOnly))
        return false;
    file.write("#!/bin/sh\n");
    file.close();
    return file.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
}

} // namespace

class TestAutostart final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void init();

    void enablingWritesAValidEntry();
    void disablingRemovesIt();
    void entryTurnedOffInTheDesktopSettingsIsOff();
    void withoutXdgConfigHomeItIsInDotConfig();
    void missingProgramIsRefused();
    void unwritableFolderIsAClearError();

private:
    std::unique_ptr<QTemporaryDir> m_dir;
    QString m_program;
    QString m_entry;
};

void TestAutostart::init() {
    m_dir = std::make_unique<QTemporaryDir>();
    QVERIFY(m_dir->isValid());
    qputenv("XDG_CONFIG_HOME", QFile::encodeName(m_dir->filePath(QStringLiteral("config"))));
    // Every character the Exec key must quote or escape, in a path a user could have.
    m_program = m_dir->filePath(QStringLiteral("My Apps \"$HOME\" 100% (x) `a\\b`/tessera"));
    QVERIFY(makeExecutable(m_program));
    m_entry = m_dir->filePath(QStringLiteral("config/autostart/tessera.desktop"));
}

void TestAutostart::enablingWritesAValidEntry() {
    QCOMPARE(Autostart::location(), m_entry);
    QVERIFY(!Autostart::isEnabled());
    const Status s = Autostart::setEnabled(true, m_program);
    QVERIFY2(s, s.message().c_str());
    QVERIFY(Autostart::isEnabled());
    QCOMPARE(QDir(m_dir->filePath(QStringLiteral("config/autostart"))).entryList(QDir::Files),
             QStringList{QStringLiteral("tessera.desktop")}); // no temporary file left behind

    QCOMPARE(entryValue(m_entry, QStringLiteral("Type")), QStringLiteral("Application"));
    QCOMPARE(entryValue(m_entry, QStringLiteral("Name")), QStringLiteral("Tessera"));
    QCOMPARE(entryValue(m_entry, QStringLiteral("Icon")), QStringLiteral("tessera"));
    QCOMPARE(entryValue(m_entry, QStringLiteral("X-GNOME-Autostart-enabled")), QStringLiteral("true"));
    QVERIFY(!entryValue(m_entry, QStringLiteral("Comment")).isEmpty());
    const QString exec = entryValue(m_entry, QStringLiteral("Exec"));
    QCOMPARE(parseExec(exec), (QStringList{m_program, QStringLiteral("--minimized")}));

    // Enabling again (a moved app) replaces the entry.
    const QString moved = m_dir->filePath(QStringLiteral("opt/tessera"));
    QVERIFY(makeExecutable(moved));
    QVERIFY(Autostart::setEnabled(true, moved));
    QCOMPARE(entryValue(m_entry, QStringLiteral("Exec")), moved + QStringLiteral(" --minimized"));

    const QString validator = QStandardPaths::findExecutable(QStringLiteral("desktop-file-validate"));
    if (validator.isEmpty()) {
        qInfo("desktop-file-validate is not installed (Debian: desktop-file-utils): the entry is not "
              "validated");
        return;
    }
    QVERIFY(Autostart::setEnabled(true, m_program));
    QProcess validate;
    validate.setProcessChannelMode(QProcess::MergedChannels);
    validate.start(validator, {m_entry});
    QVERIFY(validate.waitForFinished(30'000));
    const QByteArray said = validate.readAll();
    QVERIFY2(validate.exitCode() == 0 && !said.contains("error"), said.constData());
}

void TestAutostart::disablingRemovesIt() {
    QVERIFY(Autostart::setEnabled(true, m_program));
    QVERIFY(QFile::exists(m_entry));
    const Status s = Autostart::setEnabled(false, m_program);
    QVERIFY2(s, s.message().c_str());
    QVERIFY(!QFile::exists(m_entry));
    QVERIFY(!Autostart::isEnabled());
    QVERIFY(Autostart::setEnabled(false, QString())); // already off: nothing to do, not an error
}

void TestAutostart::entryTurnedOffInTheDesktopSettingsIsOff() {
    for (const QByteArray& line :
         {QByteArray("X-GNOME-Autostart-enabled=false"), QByteArray("Hidden = true")}) {
        QVERIFY(Autostart::setEnabled(true, m_program));
        QFile file(m_entry);
        QVERIFY(file.open(QIODevice::Append));
        file.write(line + '\n');
        file.close();
        QVERIFY2(!Autostart::isEnabled(), line.constData());
    }
    QVERIFY(Autostart::setEnabled(true, m_program)); // turned on again from the app
    QVERIFY(Autostart::isEnabled());
}

void TestAutostart::withoutXdgConfigHomeItIsInDotConfig() {
    const QByteArray home = qgetenv("HOME");
    qputenv("HOME", QFile::encodeName(m_dir->filePath(QStringLiteral("home"))));
    for (const QByteArray& config : {QByteArray(), QByteArray("relative/config")}) { // both ignored
        qputenv("XDG_CONFIG_HOME", config);
        QCOMPARE(Autostart::location(),
                 m_dir->filePath(QStringLiteral("home/.config/autostart/tessera.desktop")));
    }
    QVERIFY(Autostart::setEnabled(true, m_program));
    QVERIFY(QFile::exists(m_dir->filePath(QStringLiteral("home/.config/autostart/tessera.desktop"))));
    qputenv("HOME", home);
}

void TestAutostart::missingProgramIsRefused() {
    Status s = Autostart::setEnabled(true, QStringLiteral("tessera"));
    QVERIFY(!s);
    QCOMPARE(s.message(), std::string("cannot start Tessera at login: tessera is not an absolute path"));
    const QString gone = m_dir->filePath(QStringLiteral("gone/tessera"));
    s = Autostart::setEnabled(true, gone);
    QVERIFY(!s);
    QCOMPARE(s.message(),
             "cannot start Tessera at login: " + gone.toStdString() + " is not an executable program");
    QVERIFY(!QFile::exists(m_entry));
}

void TestAutostart::unwritableFolderIsAClearError() {
    // A file where the autostart folder belongs: no permission bits involved, so it holds for root too.
    QVERIFY(QDir().mkpath(m_dir->filePath(QStringLiteral("config"))));
    QFile blocker(m_dir->filePath(QStringLiteral("config/autostart")));
    QVERIFY(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    const Status s = Autostart::setEnabled(true, m_program);
    QVERIFY(!s);
    QVERIFY2(s.message().find(m_entry.toStdString()) != std::string::npos, s.message().c_str());
    QVERIFY(!Autostart::isEnabled());
}

QTEST_GUILESS_MAIN(TestAutostart)
#include "test_autostart.moc"
