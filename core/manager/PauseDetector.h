// SPDX-License-Identifier: Apache-2.0
#pragma once
// PauseDetector: one pause rule's sensor (a listed process, a full-screen window, the GPU used by
// a game, the user at the keyboard, the battery, the GPU's temperature, the time of day). The
// PausePolicy asks each detector every few hundred milliseconds on the manager's thread, so
// check() must be cheap and must never block.

#include <QString>

#include <optional>

namespace tessera::manager {

// Why the node should not compute now.
struct PauseCause {
    QString rule;   // the rule's id: "exclusive-app", "fullscreen", "gpu-graphics", "user-active",
                    // "battery", "temperature", "time-window", "snooze", "manual"
    QString reason; // for the user, completing "Paused — …": "a game is running: witcher3.exe"
    // A game or a full-screen app: the node stops (hard pause, all GPU memory freed), and a
    // snooze that ends while it is present does not end the pause.
    bool game = false;

    friend bool operator==(const PauseCause&, const PauseCause&) = default;
};

class PauseDetector {
public:
    virtual ~PauseDetector() = default;
    // The rule's id (PauseCause::rule of what it reports).
    virtual QString rule() const = 0;
    // The cause if the rule says pause now; nullopt when it does not, or when the sensor is not
    // available on this machine (see available()).
    virtual std::optional<PauseCause> check() = 0;
    // Whether this machine can sense the rule at all (no X display, no NVML, no UPower), and
    // why not in words for the settings page; a detector that cannot sense never pauses.
    virtual bool available() const { return true; }
    virtual QString unavailableReason() const { return {}; }
};

} // namespace tessera::manager
