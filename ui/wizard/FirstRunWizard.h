// SPDX-License-Identifier: Apache-2.0
#pragma once
// FirstRunWizard: the first start — what Tessera does, the coordinator's address (pre-filled with
// the packaged default) and one Contribute button, then the node's own progress in plain words
// (measuring, joining or waitlisted or refused, downloading) until it contributes. Its pages
// follow the node's state by themselves; Cancel stops the node cleanly. A dialog: Enter presses
// the page's main button, Escape closes it (as Not now; a node that already runs goes on).
// Contribute first checks the coordinator, and offers to trust a self-signed one (WelcomePage).

#include <QDialog>

class QLabel;
class QProgressBar;
class QPushButton;
class QStackedWidget;

namespace tessera::manager {
class Manager;
}

namespace tessera::ui {

class WelcomePage;

class FirstRunWizard final : public QDialog {
    Q_OBJECT

public:
    enum class Page { Welcome, Benchmark, Admission, Download, Done };
    Q_ENUM(Page)

    explicit FirstRunWizard(manager::Manager& manager, QWidget* parent = nullptr);
    ~FirstRunWizard() override;

    Page page() const { return m_page; }
    // The sentence a page shows about its step ("Your CPU (…): about 0.15 TFLOP/s in fp32",
    // "You hold stage 1 of 1 of the model", "12.5 MB of 48.0 MB", a refusal's reason).
    QString text(Page page) const;
    bool refused() const { return m_refused; }
    WelcomePage& welcome() const { return *m_welcome; }

Q_SIGNALS:
    void pageChanged(tessera::ui::FirstRunWizard::Page page);
    void dashboardRequested();

private:
    QWidget* makeBenchmark();
    QWidget* makeAdmission();
    QWidget* makeDownload();
    QWidget* makeDone();
    void join(); // the node starts (measuring first): the coordinator answered
    void cancel();
    // Moves on to the page the node's state belongs to, never back (a page passed in one poll
    // is still shown on the way, filled from the same status).
    void follow();
    void fill(Page page);
    void showPage(Page page);
    void updateSummary();

    manager::Manager& m_manager;
    QStackedWidget* m_stack;
    QLabel* m_summary;
    QLabel* m_statusLine;
    QPushButton* m_cancel;
    WelcomePage* m_welcome;
    QProgressBar* m_benchmarkBar;
    QLabel* m_benchmarkText;
    QLabel* m_admissionTitle;
    QLabel* m_admissionText;
    QLabel* m_admissionAdvice;
    QPushButton* m_retry;
    QLabel* m_doneLogo;
    QLabel* m_doneTitle; // "You are contributing", or ready and waiting (and why)
    QLabel* m_doneText;
    QProgressBar* m_downloadBar;
    QLabel* m_downloadText;
    Page m_page = Page::Welcome;
    bool m_following = false; // Contribute was clicked (or the node already runs)
    bool m_refused = false;
};

} // namespace tessera::ui
