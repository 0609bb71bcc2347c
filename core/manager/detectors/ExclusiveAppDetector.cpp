// SPDX-License-Identifier: Apache-2.0
#include "manager/detectors/ExclusiveAppDetector.h"

#include <QCoreApplication>

namespace tessera::manager {

namespace {

// Linux keeps 15 characters of a process's name in comm ("Cyberpunk2077.exe" → "Cyberpunk2077.e");
// the executable's and argv[0]'s file names are whole, but only readable for some processes.
constexpr qsizetype kCommLength = 15;

} // namespace

ExclusiveAppDetector::ExclusiveAppDetector(const QStringList& apps, const QString& procRoot)
    : m_scanner(procRoot) {
    for (const QString& app : apps) {
        const QString name = normalized(app);
        if (name.isEmpty())
            continue;
        m_apps.insert(name);
        if (app.trimmed().size() > kCommLength)
            m_truncatableApps.append(app.trimmed().toLower());
    }
}

QString ExclusiveAppDetector::normalized(const QString& name) {
    QString lower = name.trimmed().toLower();
    if (lower.endsWith(QLatin1String(".exe")))
        lower.chop(4);
    return lower;
}

bool ExclusiveAppDetector::matches(const QString& processName) const {
    if (m_apps.contains(normalized(processName)))
        return true;
    if (processName.size() != kCommLength)
        return false;
    const QString lower = processName.toLower();
    for (const QString& app : m_truncatableApps)
        if (app.startsWith(lower))
            return true;
    return false;
}

std::optional<PauseCause> ExclusiveAppDetector::check() {
    if (m_apps.isEmpty())
        return std::nullopt;
    m_scanner.scan();
    for (const auto& [pid, names] : m_scanner.processes()) {
        // argv[0]'s and the executable's file names first: whole, where comm may be cut short.
        for (auto name = names.crbegin(); name != names.crend(); ++name) {
            if (matches(*name))
                return PauseCause{
                    rule(), QCoreApplication::translate("PauseReason", "a game is running: %1").arg(*name),
                    true};
        }
    }
    return std::nullopt;
}

} // namespace tessera::manager
