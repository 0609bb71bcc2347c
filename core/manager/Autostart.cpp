// SPDX-License-Identifier: Apache-2.0
#include "manager/Autostart.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>
#include <QSettings>

namespace tessera::manager {

namespace {

const QString kMinimized = QStringLiteral("--minimized");

std::string text(const QString& s) {
    return s.toStdString();
}

Status checkProgram(const QString& program) {
    const QFileInfo info(program);
    if (!info.isAbsolute())
        return makeError("cannot start Tessera at login: " + text(program) + " is not an absolute path");
    if (!info.isFile() || !info.isExecutable())
        return makeError("cannot start Tessera at login: " + text(program) + " is not an executable program");
    return {};
}

#if !defined(Q_OS_WIN)

// Writes the whole file or nothing: a half-written entry would be worse than none.
Status writeAtomically(const QString& path, const QByteArray& content) {
    if (!QDir().mkpath(QFileInfo(path).absolutePath()))
        return makeError("cannot create the folder of " + text(path) + " (check its permissions)");
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(content) != content.size() || !file.flush() ||
        !file.commit())
        return makeError("cannot write " + text(path) + ": " + text(file.errorString()));
    return {};
}

Status removeFile(const QString& path) {
    QFile file(path);
    if (file.exists() && !file.remove())
        return makeError("cannot remove " + text(path) + ": " + text(file.errorString()) +
                         "; delete it to stop Tessera starting at login");
    return {};
}

#endif

#if !defined(Q_OS_WIN) && !defined(Q_OS_MACOS)

// The Desktop Entry spec's escapes for a value of type string (applied last).
QString escapeString(const QString& value) {
    QString out;
    for (const QChar c : value) {
        if (c == u'\\')
            out += QStringLiteral("\\\\");
        else if (c == u'\n')
            out += QStringLiteral("\\n");
        else if (c == u'\t')
            out += QStringLiteral("\\t");
        else if (c == u'\r')
            out += QStringLiteral("\\r");
        else
            out += c;
    }
    return out;
}

// One argument of an Exec key: double-quoted when it holds a reserved character, with `"`, `` ` ``,
// `$` and `\` escaped inside the quotes; `%` doubled, since a single one starts a field code.
QString execArgument(const QString& argument) {
    static const QString reserved = QStringLiteral(" \t\n\"'\\><~|&;$*?#()`");
    bool quote = argument.isEmpty();
    for (const QChar c : argument)
        quote = quote || reserved.contains(c);
    QString out;
    for (const QChar c : argument) {
        if (quote && (c == u'"' || c == u'`' || c == u'$' || c == u'\\'))
            out += u'\\';
        out += c;
        if (c == u'%')
            out += u'%';
    }
    return escapeString(quote ? u'"' + out + u'"' : out);
}

QByteArray desktopEntry(const QString& program) {
    const QString entry =
        QStringLiteral("[Desktop Entry]\n"
                       "Type=Application\n"
                       "Version=1.0\n"
                       "Name=Tessera\n"
                       "Comment=Lend this computer's GPU to LLM training while it is idle\n"
                       "Exec=%1 %2\n"
                       // Without the program (the app was deleted) the entry is skipped, not an error.
                       "TryExec=%3\n"
                       "Icon=tessera\n"
                       "Terminal=false\n"
                       "X-GNOME-Autostart-enabled=true\n")
            .arg(execArgument(program), kMinimized, escapeString(program));
    return entry.toUtf8();
}

// Whether the entry in the file is on: the spec's Hidden=true and GNOME's switch turn it off.
bool entryEnabled(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly | QIODevice::Text))
        return false;
    bool inEntry = false;
    bool enabled = true;
    while (!file.atEnd()) {
        QByteArray line = file.readLine().trimmed();
        if (line.startsWith('[')) {
            inEntry = line == "[Desktop Entry]";
            continue;
        }
        line.replace(" ", ""); // "Hidden = true" is the same key and value
        if (inEntry && (line == "Hidden=true" || line == "X-GNOME-Autostart-enabled=false"))
            enabled = false;
    }
    return enabled;
}

#endif

#if defined(Q_OS_MACOS)

QByteArray launchAgent(const QString& program) {
    return QStringLiteral("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                          "<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" "
                          "\"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n"
                          "<plist version=\"1.0\">\n"
                          "<dict>\n"
                          "    <key>Label</key>\n"
                          "    <string>org.tessera.app</string>\n"
                          "    <key>ProgramArguments</key>\n"
                          "    <array>\n"
                          "        <string>%1</string>\n"
                          "        <string>%2</string>\n"
                          "    </array>\n"
                          "    <key>RunAtLoad</key>\n"
                          "    <true/>\n"
                          "    <key>ProcessType</key>\n"
                          "    <string>Interactive</string>\n"
                          "</dict>\n"
                          "</plist>\n")
        .arg(program.toHtmlEscaped(), kMinimized)
        .toUtf8();
}

#endif

#if defined(Q_OS_WIN)
const QString kRunValue = QStringLiteral("Tessera");
#endif

} // namespace

QString Autostart::location() {
#if defined(Q_OS_WIN)
    return QStringLiteral("HKEY_CURRENT_USER\\Software\\Microsoft\\Windows\\CurrentVersion\\Run");
#elif defined(Q_OS_MACOS)
    return QDir::homePath() + QStringLiteral("/Library/LaunchAgents/org.tessera.app.plist");
#else
    // The XDG base directory spec: an unset, empty or relative $XDG_CONFIG_HOME means ~/.config.
    QString config = qEnvironmentVariable("XDG_CONFIG_HOME");
    if (config.isEmpty() || !QDir::isAbsolutePath(config))
        config = QDir::homePath() + QStringLiteral("/.config");
    return config + QStringLiteral("/autostart/tessera.desktop");
#endif
}

Status Autostart::setEnabled(bool enabled, const QString& program) {
    if (enabled) {
        if (Status s = checkProgram(program); !s)
            return s;
    }
#if defined(Q_OS_WIN)
    QSettings run(location(), QSettings::NativeFormat);
    if (enabled)
        run.setValue(kRunValue,
                     u'"' + QDir::toNativeSeparators(program) + QStringLiteral("\" ") + kMinimized);
    else
        run.remove(kRunValue);
    run.sync();
    if (run.status() != QSettings::NoError)
        return makeError("cannot change " + text(location()) + " in the registry");
    return {};
#elif defined(Q_OS_MACOS)
    return enabled ? writeAtomically(location(), launchAgent(program)) : removeFile(location());
#else
    return enabled ? writeAtomically(location(), desktopEntry(program)) : removeFile(location());
#endif
}

bool Autostart::isEnabled() {
#if defined(Q_OS_WIN)
    return QSettings(location(), QSettings::NativeFormat).contains(kRunValue);
#elif defined(Q_OS_MACOS)
    return QFileInfo::exists(location());
#else
    return entryEnabled(location());
#endif
}

} // namespace tessera::manager
