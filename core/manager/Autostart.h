// SPDX-License-Identifier: Apache-2.0
#pragma once
// Autostart: "start at login" — an XDG autostart entry on Linux ($XDG_CONFIG_HOME/autostart),
// the HKCU Run key on Windows, a LaunchAgent on macOS (the latter two compiled there).

#include "base/Result.h"

#include <QString>

namespace tessera::manager {

class Autostart final {
public:
    // program: the app's absolute path (started with --minimized at login).
    static Status setEnabled(bool enabled, const QString& program);
    static bool isEnabled();
    // Where the entry lives on this platform (a file path, or the registry key's name).
    static QString location();
};

} // namespace tessera::manager
