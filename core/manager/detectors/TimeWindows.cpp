// SPDX-License-Identifier: Apache-2.0
#include "manager/detectors/TimeWindows.h"

#include <QRegularExpression>
#include <QStringList>

#include <optional>

namespace tessera::manager {

namespace {

// 0 for Monday; accepts "Mon" and "Monday", any case.
std::optional<int> parseDay(const QString& word) {
    static const char* const kNames[] = {"monday", "tuesday",  "wednesday", "thursday",
                                         "friday", "saturday", "sunday"};
    const QString lower = word.toLower();
    for (int i = 0; i < 7; ++i) {
        const QString name = QString::fromLatin1(kNames[i]);
        if (lower == name || lower == name.left(3))
            return i;
    }
    return std::nullopt;
}

// "18:00" → 1080; 24:00 only where allowed (a window's end).
std::optional<int> parseClock(const QString& text, bool allow24) {
    static const QRegularExpression kClock(
        QRegularExpression::anchoredPattern(QStringLiteral("(\\d{1,2}):(\\d{2})")));
    const auto match = kClock.match(text);
    if (!match.hasMatch())
        return std::nullopt;
    const int hours = match.captured(1).toInt();
    const int minutes = match.captured(2).toInt();
    if (minutes > 59 || hours > 24 || (hours == 24 && (minutes != 0 || !allow24)))
        return std::nullopt;
    return hours * 60 + minutes;
}

// "'Mon-Fry': unknown day; …": the user's own words first, so they see what to correct.
Error mistake(const QString& words, const char* why) {
    return makeError(QStringLiteral("'%1': %2").arg(words, QString::fromUtf8(why)).toStdString());
}

} // namespace

Result<TimeWindows> TimeWindows::parse(const QString& text) {
    TimeWindows windows;
    QStringList tidied;
    for (const QString& part : text.split(QLatin1Char(','))) {
        const QString entry = part.simplified();
        if (entry.isEmpty())
            continue; // "Mon-Fri," is not worth an error
        auto window = parseWindow(entry);
        if (!window)
            return window.error();
        windows.m_windows.push_back(*window);
        tidied.append(entry);
    }
    windows.m_text = tidied.join(QStringLiteral(", "));
    return windows;
}

Result<TimeWindows::Window> TimeWindows::parseWindow(const QString& entry) {
    Window window;
    bool anyDay = false;
    bool hoursSeen = false;
    for (const QString& token : entry.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
        if (hoursSeen)
            return mistake(entry, "put the days before the hours, like Mon-Fri 18:00-08:00");
        if (token.contains(QLatin1Char(':'))) {
            const QStringList ends = token.split(QLatin1Char('-'));
            const auto start = ends.size() == 2 ? parseClock(ends[0], false) : std::nullopt;
            const auto end = ends.size() == 2 ? parseClock(ends[1], true) : std::nullopt;
            if (!start || !end)
                return mistake(token, "not a range of hours; write it like 18:00-08:00");
            if (*start == *end)
                return mistake(token,
                               "starts and ends at the same time; leave out the hours for a whole day");
            window.startMinute = *start;
            window.endMinute = *end;
            hoursSeen = true;
            continue;
        }
        const QStringList ends = token.split(QLatin1Char('-'));
        const auto first = parseDay(ends.front());
        const auto last = ends.size() == 2 ? parseDay(ends.back()) : first;
        if (ends.size() > 2 || !first || !last)
            return mistake(token, "unknown day; use Mon, Tue, Wed, Thu, Fri, Sat or Sun");
        // "Fri-Mon" wraps over the weekend.
        for (int day = *first;; day = (day + 1) % 7) {
            window.days[day] = true;
            if (day == *last)
                break;
        }
        anyDay = true;
    }
    if (!anyDay)
        window.days.fill(true); // "18:00-08:00" alone: every day
    return window;
}

bool TimeWindows::contains(const QDateTime& local) const {
    if (m_windows.empty())
        return true;
    const int day = local.date().dayOfWeek() - 1;
    const int yesterday = (day + 6) % 7;
    const int minute = local.time().hour() * 60 + local.time().minute();
    for (const Window& w : m_windows) {
        if (w.startMinute < w.endMinute) {
            if (w.days[day] && minute >= w.startMinute && minute < w.endMinute)
                return true;
        } else if ((w.days[day] && minute >= w.startMinute) || (w.days[yesterday] && minute < w.endMinute)) {
            return true; // past midnight: the night belongs to the day it began on
        }
    }
    return false;
}

} // namespace tessera::manager
