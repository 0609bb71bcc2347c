// SPDX-License-Identifier: Apache-2.0
#include "wizard/FirstRunWizard.h"

#include "tray/TrayIcons.h"
#include "wizard/WelcomePage.h"
#include "wizard/WizardLabels.h"
#include "manager/NodeStatusText.h"

#include "manager/AppSettings.h"
#include "manager/Manager.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QScreen>
#include <QStackedWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <optional>

namespace tessera::ui {

using namespace Qt::StringLiterals;
using manager::AppSettings;
using manager::AppState;
using manager::NodeStatusText;

namespace {

// The page a node state belongs to; none while it stops (a cancel or a refusal).
std::optional<FirstRunWizard::Page> pageOf(const QString& state) {
    using Page = FirstRunWizard::Page;
    if (state == u"Starting" || state == u"Benchmarking")
        return Page::Benchmark;
    if (state == u"Admitting" || state == u"Waitlisted")
        return Page::Admission;
    if (state == u"Downloading" || state == u"Joining")
        return Page::Download;
    if (state == u"Working" || state == u"Paused")
        return Page::Done;
    return std::nullopt;
}

} // namespace

FirstRunWizard::FirstRunWizard(manager::Manager& manager, QWidget* parent)
    : QDialog(parent)
    , m_manager(manager) {
    setWindowTitle(tr("Welcome to Tessera"));
    setSizeGripEnabled(true);
    setMinimumSize(560, 360);
    // Never larger than the screen (1280 × 720 at 150 % leaves 853 × 458).
    const QRect available = screen() ? screen()->availableGeometry() : QRect(0, 0, 1280, 720);
    resize(std::min(620, available.width() * 19 / 20), std::min(500, available.height() * 19 / 20));

    m_stack = new QStackedWidget;
    m_welcome = new WelcomePage(m_manager.settings());
    connect(m_welcome, &WelcomePage::joinRequested, this, &FirstRunWizard::join);
    connect(m_welcome, &WelcomePage::notNowClicked, this, &QWidget::close);
    m_stack->addWidget(m_welcome);
    m_stack->addWidget(makeBenchmark());
    m_stack->addWidget(makeAdmission());
    m_stack->addWidget(makeDownload());
    m_stack->addWidget(makeDone());

    m_summary = new QLabel;
    m_summary->setObjectName(u"summary"_s);
    m_summary->setWordWrap(true);
    m_summary->setTextFormat(Qt::RichText);
    m_statusLine = new QLabel;
    m_statusLine->setObjectName(u"statusLine"_s);
    m_statusLine->setWordWrap(true);
    m_cancel = new QPushButton(tr("Cancel"));
    m_cancel->setObjectName(u"cancel"_s);
    m_cancel->setAutoDefault(false); // Enter never stops the node
    m_cancel->setToolTip(tr("Stop and leave the swarm; nothing stays running"));
    connect(m_cancel, &QPushButton::clicked, this, &FirstRunWizard::cancel);

    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_cancel);
    buttons->addStretch();
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(24, 20, 24, 16);
    layout->addWidget(m_summary);
    layout->addSpacing(6);
    layout->addWidget(m_stack, 1);
    layout->addWidget(m_statusLine);
    layout->addLayout(buttons);

    connect(&m_manager, &manager::Manager::stateChanged, this, &FirstRunWizard::follow);
    connect(&m_manager, &manager::Manager::nodeStatusChanged, this, &FirstRunWizard::follow);
    connect(&m_manager, &manager::Manager::swarmStatusChanged, this, [this] { fill(m_page); });

    // Opened again while the node already prepares (the app restarted mid-download): go on.
    m_following = m_manager.state() != AppState::NotStarted;
    showPage(Page::Welcome);
    follow();
}

FirstRunWizard::~FirstRunWizard() = default;

QWidget* FirstRunWizard::makeBenchmark() {
    auto* page = new QWidget;
    auto* layout = new QVBoxLayout(page);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(titleLabel(tr("Measuring your computer")));
    layout->addWidget(
        bodyLabel(tr("Tessera measures how fast this computer trains the model, to give it a part "
                     "that fits. This takes about a minute and happens only once.")));
    m_benchmarkBar = new QProgressBar;
    m_benchmarkBar->setTextVisible(false);
    layout->addWidget(m_benchmarkBar);
    m_benchmarkText = bodyLabel();
    m_benchmarkText->setObjectName(u"benchmarkText"_s);
    layout->addWidget(m_benchmarkText);
    layout->addStretch();
    return page;
}

QWidget* FirstRunWizard::makeAdmission() {
    auto* page = new QWidget;
    auto* layout = new QVBoxLayout(page);
    layout->setContentsMargins(0, 0, 0, 0);
    m_admissionTitle = titleLabel(tr("Joining the swarm"));
    layout->addWidget(m_admissionTitle);
    m_admissionText = bodyLabel();
    m_admissionText->setObjectName(u"admissionText"_s);
    layout->addWidget(m_admissionText);
    m_admissionAdvice = bodyLabel();
    layout->addWidget(m_admissionAdvice);
    layout->addStretch();
    m_retry = new QPushButton(tr("&Try again"));
    m_retry->setObjectName(u"retry"_s);
    connect(m_retry, &QPushButton::clicked, this, &FirstRunWizard::join);
    auto* row = new QHBoxLayout;
    row->addStretch();
    row->addWidget(m_retry);
    layout->addLayout(row);
    return page;
}

QWidget* FirstRunWizard::makeDownload() {
    auto* page = new QWidget;
    auto* layout = new QVBoxLayout(page);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(titleLabel(tr("Downloading your part of the model")));
    layout->addWidget(bodyLabel(tr("Only your part comes to this computer, never the whole model. If the "
                                   "connection drops, the download continues where it stopped.")));
    m_downloadBar = new QProgressBar;
    layout->addWidget(m_downloadBar);
    m_downloadText = bodyLabel();
    m_downloadText->setObjectName(u"downloadText"_s);
    layout->addWidget(m_downloadText);
    layout->addStretch();
    return page;
}

QWidget* FirstRunWizard::makeDone() {
    auto* page = new QWidget;
    auto* layout = new QVBoxLayout(page);
    layout->setContentsMargins(0, 0, 0, 0);
    m_doneLogo = new QLabel;
    layout->addWidget(m_doneLogo);
    m_doneTitle = titleLabel(QString());
    m_doneTitle->setObjectName(u"doneTitle"_s);
    layout->addWidget(m_doneTitle);
    m_doneText = bodyLabel();
    layout->addWidget(m_doneText);
    layout->addStretch();
    auto* dashboard = new QPushButton(tr("Open the &dashboard"));
    dashboard->setObjectName(u"openDashboard"_s);
    connect(dashboard, &QPushButton::clicked, this, [this] {
        Q_EMIT dashboardRequested();
        close();
    });
    auto* done = new QPushButton(tr("Close"));
    done->setObjectName(u"close"_s);
    done->setDefault(true);
    connect(done, &QPushButton::clicked, this, &QWidget::close);
    auto* row = new QHBoxLayout;
    row->addWidget(dashboard);
    row->addStretch();
    row->addWidget(done);
    layout->addLayout(row);
    return page;
}

QString FirstRunWizard::text(Page page) const {
    switch (page) {
    case Page::Welcome:
        return m_welcome->checkText();
    case Page::Benchmark:
        return m_benchmarkText->text();
    case Page::Admission:
        return m_admissionText->text();
    case Page::Download:
        return m_downloadText->text();
    case Page::Done:
        return m_doneTitle->text();
    }
    return {};
}

void FirstRunWizard::join() {
    m_following = true;
    m_refused = false;
    m_manager.contribute();
    if (m_page == Page::Welcome)
        showPage(Page::Benchmark);
    follow();
}

void FirstRunWizard::cancel() {
    m_following = false;
    m_refused = false;
    m_manager.stopContributing();
    m_benchmarkText->clear();
    m_admissionText->clear();
    m_downloadText->clear();
    showPage(Page::Welcome);
}

void FirstRunWizard::follow() {
    if (!m_following)
        return;
    const AppState state = m_manager.state();
    const bool paused = state == AppState::Paused || state == AppState::Waiting;
    m_statusLine->setText(paused ? m_manager.stateText() : QString());
    if (state == AppState::Error) {
        // Refused (or failing in a way retrying alone cannot fix): say why where joining is told.
        m_refused = true;
        fill(Page::Admission);
        showPage(Page::Admission);
        return;
    }
    m_refused = false;
    const std::optional<Page> target = pageOf(m_manager.nodeStatus().value(u"state").toString());
    if (target && *target > m_page) {
        fill(m_page); // the page left behind keeps its final words from this status
        for (int p = int(m_page) + 1; p <= int(*target); ++p) {
            fill(Page(p));
            showPage(Page(p));
        }
    }
    fill(m_page);
    if (m_page == Page::Done && !m_manager.settings().flag(AppSettings::Key::FirstRunDone))
        m_manager.settings().setValue(AppSettings::Key::FirstRunDone, true);
}

void FirstRunWizard::fill(Page page) {
    const QJsonObject status = m_manager.nodeStatus();
    const QString nodeState = status.value(u"state").toString();
    switch (page) {
    case Page::Welcome:
        m_welcome->refresh();
        break;
    case Page::Benchmark: {
        const QString result = NodeStatusText::benchmark(status);
        const double progress = NodeStatusText::benchmarkProgress(status);
        if (progress < 0 && result.isEmpty()) {
            m_benchmarkBar->setRange(0, 0); // busy: the node has not said how long yet
        } else {
            m_benchmarkBar->setRange(0, 100);
            m_benchmarkBar->setValue(int((result.isEmpty() ? progress : 1.0) * 100));
        }
        const QString fallback =
            NodeStatusText::cpuFallback(status, m_manager.settings().string(AppSettings::Key::Device));
        m_benchmarkText->setText(result.isEmpty()     ? tr("Measuring…")
                                 : fallback.isEmpty() ? result
                                                      : result + u'\n' + fallback);
        break;
    }
    case Page::Admission:
        m_retry->setVisible(m_refused);
        if (m_refused) {
            m_admissionTitle->setText(tr("Tessera could not join the swarm"));
            m_admissionText->setText(m_manager.stateText());
            m_admissionAdvice->setText(NodeStatusText::refusalAdvice(m_manager.supervisor().refusal().kind));
            break;
        }
        m_admissionTitle->setText(tr("Joining the swarm"));
        m_admissionAdvice->clear();
        if (nodeState == u"Waitlisted")
            m_admissionText->setText(NodeStatusText::waitlist(status, m_manager.swarmStatus()));
        else if (const QString stage = NodeStatusText::stage(status, m_manager.swarmStatus());
                 !stage.isEmpty())
            m_admissionText->setText(stage);
        else
            m_admissionText->setText(tr("Asking the coordinator for a part of the model to hold…"));
        break;
    case Page::Download: {
        const double progress = NodeStatusText::downloadProgress(status);
        m_downloadBar->setRange(0, progress < 0 ? 0 : 100);
        m_downloadBar->setValue(int(std::max(0.0, progress) * 100));
        m_downloadText->setText(nodeState == u"Joining" ? tr("Downloaded. Loading your part of the model…")
                                                        : NodeStatusText::download(status));
        break;
    }
    case Page::Done: {
        // Green only while tasks flow: a node whose stage waits for others says so (and why).
        const bool contributing = m_manager.state() == AppState::Contributing;
        m_doneLogo->setPixmap(
            TrayIcons::pixmap(contributing ? AppState::Contributing : AppState::Waiting, 64));
        m_doneTitle->setText(contributing ? tr("You are contributing") : tr("You are ready to contribute"));
        m_doneText->setText(contributing
                                ? tr("Thank you. Tessera keeps working in the tray and pauses by itself "
                                     "when you play. You can close this window.")
                                : tr("%1. Tessera starts working by itself as soon as it can, and pauses "
                                     "by itself when you play. You can close this window.")
                                      .arg(m_manager.stateText()));
        break;
    }
    }
    updateSummary();
}

void FirstRunWizard::showPage(Page page) {
    const bool changed = page != m_page || m_stack->currentIndex() != int(page);
    m_page = page;
    m_stack->setCurrentIndex(int(page));
    m_cancel->setVisible(page != Page::Welcome && page != Page::Done);
    // Enter presses the shown page's main button (a dialog has one default button at a time).
    QPushButton* main = page == Page::Welcome ? m_welcome->findChild<QPushButton*>(u"contribute"_s)
                        : page == Page::Done
                            ? m_stack->widget(int(Page::Done))->findChild<QPushButton*>(u"close"_s)
                            : nullptr;
    if (main) {
        // Off first: a button made default before it had this dialog as parent is marked
        // default but unknown to the dialog, and setDefault(true) alone would change nothing.
        main->setDefault(false);
        main->setDefault(true);
    }
    if (page == Page::Welcome)
        fill(page);
    updateSummary();
    if (changed)
        Q_EMIT pageChanged(page);
}

void FirstRunWizard::updateSummary() {
    // What is already done stays in view while the next step runs.
    QStringList lines;
    const QJsonObject status = m_manager.nodeStatus();
    if (m_page > Page::Benchmark)
        if (const QString b = NodeStatusText::benchmark(status); !b.isEmpty())
            lines << b;
    if (m_page > Page::Admission && !m_refused)
        if (const QString s = NodeStatusText::stage(status, m_manager.swarmStatus()); !s.isEmpty())
            lines << s;
    // A green tick before each: the step is done.
    const QString tick =
        u"<span style=\"color: %1\">✓</span>&nbsp; "_s.arg(TrayIcons::colour(AppState::Contributing).name());
    for (QString& line : lines)
        line = tick + line.toHtmlEscaped();
    m_summary->setText(lines.join(u"<br>"_s));
    m_summary->setVisible(!lines.isEmpty());
}

} // namespace tessera::ui
