// SPDX-License-Identifier: Apache-2.0
#pragma once
// TimeWindows: the hours the user contributes in ("Mon-Fri 18:00-08:00, Sat-Sun"), parsed once and
// asked whether an instant of local time lies inside them.

#include "base/Result.h"

#include <QDateTime>
#include <QString>

#include <array>
#include <vector>

namespace tessera::manager {

class TimeWindows {
public:
    // Comma-separated windows, each a list of days and ranges of days ("Mon-Fri", "Sat Sun",
    // "Fri-Mon") followed by an optional range of hours ("18:00-08:00"). Days without hours are the
    // whole day; hours without days are every day; a range that ends past midnight belongs to the
    // day it starts on. Empty text: always. The settings dialog shows the error to the user.
    static Result<TimeWindows> parse(const QString& text);

    bool empty() const { return m_windows.empty(); }
    // Whether `local` lies in a window (always true when there are none).
    bool contains(const QDateTime& local) const;
    // The text it was parsed from, whitespace tidied: shown in the pause reason.
    const QString& text() const { return m_text; }

private:
    struct Window {
        std::array<bool, 7> days{}; // Monday first, like QDate::dayOfWeek() - 1
        int startMinute = 0;        // minutes after midnight
        int endMinute = 24 * 60;    // exclusive; ≤ start: ends on the next day
    };
    static Result<Window> parseWindow(const QString& entry);

    std::vector<Window> m_windows;
    QString m_text;
};

} // namespace tessera::manager
