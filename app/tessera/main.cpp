// SPDX-License-Identifier: Apache-2.0
// tessera: the desktop app (tray, wizard, dashboard, settings); its logic is core/manager/.
#include "DesktopApp.h"
#include "InstanceBlockedMessage.h"
#include "widgets/Translations.h"

#include "common/ShutdownSignals.h"
#include "manager/AppSettings.h"
#include "manager/Manager.h"
#include "manager/SingleInstance.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QCryptographicHash>
#include <QFileInfo>

#include <cstdio>
#include <memory>

using namespace Qt::StringLiterals;
using namespace tessera;

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName(u"tessera"_s);
    QApplication::setApplicationDisplayName(u"Tessera"_s);
    QApplication::setOrganizationName(u"Tessera"_s);
    QApplication::setApplicationVersion(QStringLiteral(TESSERA_VERSION));
    // The tray (or the app's own question, without one) decides when to quit, never the last
    // window closing: the node must be stopped first.
    QApplication::setQuitOnLastWindowClosed(false);
    // In the user's language where Tessera ships it (LANG, LC_MESSAGES, LANGUAGE).
    ui::Translations::install();

    QCommandLineParser parser;
    parser.setApplicationDescription(u"Lend your GPU to the training of a large language model."_s);
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption minimized(u"minimized"_s, u"Start in the tray without a window (at login)."_s);
    const QCommandLineOption settingsFile(u"settings"_s, u"Use this settings file."_s, u"FILE"_s);
    const QCommandLineOption show(u"show"_s, u"Also show a window: wizard, dashboard or settings."_s,
                                  u"WINDOW"_s);
    parser.addOptions({minimized, settingsFile, show});
    parser.process(app);

    std::unique_ptr<manager::AppSettings> settings;
    QString instance = manager::defaultInstanceName();
    if (parser.isSet(settingsFile)) {
        const QString path = QFileInfo(parser.value(settingsFile)).absoluteFilePath();
        // Over the packaged defaults too (make demo names its coordinator there).
        settings = std::make_unique<manager::AppSettings>(path, nullptr,
                                                          manager::AppSettings::packagedDefaultsPath());
        // Another settings file is another app (tests, screenshots): its own single instance.
        instance +=
            u'-' + QString::fromLatin1(
                       QCryptographicHash::hash(path.toUtf8(), QCryptographicHash::Sha256).toHex().left(12));
    } else {
        settings = std::make_unique<manager::AppSettings>();
    }

    manager::SingleInstance single(instance);
    switch (single.claim()) {
    case manager::SingleInstance::Claim::First:
        break;
    case manager::SingleInstance::Claim::Second:
        return 0; // the first instance shows its window
    case manager::SingleInstance::Claim::Blocked:
        // Said in words, never a silent exit at every start.
        std::fprintf(stderr, "%s\n", qPrintable(ui::InstanceBlockedMessage::text(single.blocker())));
        ui::InstanceBlockedMessage::show(single.blocker());
        return 1;
    }

    manager::Manager manager(*settings);
    ui::DesktopApp desktop(manager);
    QObject::connect(&single, &manager::SingleInstance::showRequested, &desktop, &ui::DesktopApp::showMain);
    // The session ending (SIGTERM at logout) or Ctrl+C is a Quit: the node stops with the app.
    Result<std::unique_ptr<ShutdownSignals>> shutdownSignals = ShutdownSignals::install();
    if (shutdownSignals)
        QObject::connect(shutdownSignals->get(), &ShutdownSignals::received, &desktop, &ui::DesktopApp::quit);
    desktop.start(ui::DesktopApp::Options{parser.isSet(minimized), parser.value(show)});
    return QApplication::exec();
}
