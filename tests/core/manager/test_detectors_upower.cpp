// SPDX-License-Identifier: Apache-2.0
#include "test_detectors_upower.h"

#include <QDBusMessage>
#include <QVariantMap>

namespace tessera::test {

namespace {

QString uniqueName() {
    static int count = 0;
    return QStringLiteral("fake-upower-%1").arg(++count);
}

} // namespace

FakeUPower::FakeUPower(const QString& address, bool onBattery)
    : m_name(uniqueName())
    , m_bus(QDBusConnection::connectToBus(address, m_name))
    , m_onBattery(onBattery) {
    m_registered = m_bus.registerObject(QStringLiteral("/org/freedesktop/UPower"), this,
                                        QDBusConnection::ExportAllProperties) &&
                   m_bus.registerService(QStringLiteral("org.freedesktop.UPower"));
}

FakeUPower::~FakeUPower() {
    m_bus.unregisterService(QStringLiteral("org.freedesktop.UPower"));
    m_bus.unregisterObject(QStringLiteral("/org/freedesktop/UPower"));
    m_bus = QDBusConnection(QString());
    QDBusConnection::disconnectFromBus(m_name);
}

void FakeUPower::setOnBattery(bool onBattery) {
    m_onBattery = onBattery;
    QDBusMessage signal = QDBusMessage::createSignal(QStringLiteral("/org/freedesktop/UPower"),
                                                     QStringLiteral("org.freedesktop.DBus.Properties"),
                                                     QStringLiteral("PropertiesChanged"));
    signal << QStringLiteral("org.freedesktop.UPower")
           << QVariantMap{{QStringLiteral("OnBattery"), onBattery}} << QStringList();
    m_bus.send(signal);
}

} // namespace tessera::test
