// SPDX-License-Identifier: Apache-2.0
#include "manager/detectors/BatteryDetector.h"

#include <QCoreApplication>
#include <QDBusError>
#include <QDBusMessage>
#include <QDBusPendingCallWatcher>
#include <QDBusPendingReply>
#include <QDBusServiceWatcher>
#include <QDBusVariant>

#if defined(Q_OS_WIN)
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#elif defined(Q_OS_MACOS)
#include <CoreFoundation/CoreFoundation.h>
#include <IOKit/ps/IOPSKeys.h>
#include <IOKit/ps/IOPowerSources.h>
#endif

namespace tessera::manager {

namespace {

#if !defined(Q_OS_WIN) && !defined(Q_OS_MACOS)
constexpr bool kUsesUPower = true;
#else
constexpr bool kUsesUPower = false;
#endif

const QString kService = QStringLiteral("org.freedesktop.UPower");
const QString kPath = QStringLiteral("/org/freedesktop/UPower");
const QString kInterface = QStringLiteral("org.freedesktop.UPower");
const QString kProperties = QStringLiteral("org.freedesktop.DBus.Properties");
const QString kOnBattery = QStringLiteral("OnBattery");

QString noUPower() {
    return QStringLiteral("no UPower on this machine");
}

QString privateConnectionName(const QString& busAddress) {
    static int count = 0;
    return busAddress.isEmpty() || !kUsesUPower ? QString()
                                                : QStringLiteral("tessera-battery-%1").arg(++count);
}

QDBusConnection openBus(const QString& busAddress, const QString& connectionName) {
    if (!kUsesUPower)
        return QDBusConnection(QString());
    return connectionName.isEmpty() ? QDBusConnection::systemBus()
                                    : QDBusConnection::connectToBus(busAddress, connectionName);
}

} // namespace

BatteryDetector::BatteryDetector(const QString& busAddress, QObject* parent)
    : QObject(parent)
    , m_connectionName(privateConnectionName(busAddress))
    , m_bus(openBus(busAddress, m_connectionName)) {
    if (!kUsesUPower)
        return;
    if (!m_bus.isConnected()) {
        m_unavailable =
            noUPower() + QStringLiteral(" (no system D-Bus: %1)").arg(m_bus.lastError().message());
        return;
    }
    // Subscribed before asking, so that no change can fall between the answer and the subscription.
    m_bus.connect(kService, kPath, kProperties, QStringLiteral("PropertiesChanged"), this,
                  SLOT(onPropertiesChanged(QString, QVariantMap, QStringList)));
    auto* watcher = new QDBusServiceWatcher(
        kService, m_bus,
        QDBusServiceWatcher::WatchForRegistration | QDBusServiceWatcher::WatchForUnregistration, this);
    connect(watcher, &QDBusServiceWatcher::serviceRegistered, this, &BatteryDetector::onUPowerAppeared);
    connect(watcher, &QDBusServiceWatcher::serviceUnregistered, this, &BatteryDetector::onUPowerGone);
    m_unavailable = QStringLiteral("asking UPower whether this computer runs on battery");
    askOnBattery();
}

BatteryDetector::~BatteryDetector() {
    if (!m_connectionName.isEmpty()) {
        m_bus = QDBusConnection(QString());
        QDBusConnection::disconnectFromBus(m_connectionName);
    }
}

std::optional<PauseCause> BatteryDetector::check() {
    bool onBattery = false;
#if defined(Q_OS_WIN)
    SYSTEM_POWER_STATUS status{};
    onBattery = GetSystemPowerStatus(&status) && status.ACLineStatus == 0;
#elif defined(Q_OS_MACOS)
    if (CFTypeRef info = IOPSCopyPowerSourcesInfo()) {
        if (CFStringRef source = IOPSGetProvidingPowerSourceType(info))
            onBattery = CFStringCompare(source, CFSTR(kIOPSBatteryPowerValue), 0) == kCFCompareEqualTo;
        CFRelease(info);
    }
#else
    onBattery = m_unavailable.isEmpty() && m_onBattery;
#endif
    if (!onBattery)
        return std::nullopt;
    return PauseCause{rule(), QCoreApplication::translate("PauseReason", "on battery"), false};
}

bool BatteryDetector::available() const {
    return unavailableReason().isEmpty();
}

QString BatteryDetector::unavailableReason() const {
#if defined(Q_OS_WIN)
    SYSTEM_POWER_STATUS status{};
    if (GetSystemPowerStatus(&status) && (status.BatteryFlag & 128) != 0) // 128: no system battery
        return QStringLiteral("this computer has no battery");
    return {};
#elif defined(Q_OS_MACOS)
    return {};
#else
    return m_unavailable;
#endif
}

void BatteryDetector::askOnBattery() {
    QDBusMessage call = QDBusMessage::createMethodCall(kService, kPath, kProperties, QStringLiteral("Get"));
    call << kInterface << kOnBattery;
    auto* watcher = new QDBusPendingCallWatcher(m_bus.asyncCall(call), this);
    // D-Bus keeps one sender's messages in order, so this answer and any change signal arrive in
    // the order UPower sent them: the later one is the truth.
    connect(watcher, &QDBusPendingCallWatcher::finished, this, [this](QDBusPendingCallWatcher* finished) {
        finished->deleteLater();
        const QDBusPendingReply<QDBusVariant> reply = *finished;
        if (reply.isError()) {
            m_onBattery = false;
            m_unavailable = noUPower();
            return;
        }
        m_onBattery = reply.value().variant().toBool();
        m_unavailable.clear();
    });
}

void BatteryDetector::onPropertiesChanged(const QString& interface, const QVariantMap& changed,
                                          const QStringList& invalidated) {
    if (interface != kInterface)
        return;
    if (changed.contains(kOnBattery)) {
        m_onBattery = changed.value(kOnBattery).toBool();
        m_unavailable.clear();
    } else if (invalidated.contains(kOnBattery)) {
        askOnBattery();
    }
}

void BatteryDetector::onUPowerAppeared() {
    askOnBattery();
}

void BatteryDetector::onUPowerGone() {
    m_onBattery = false;
    m_unavailable = noUPower();
}

} // namespace tessera::manager
