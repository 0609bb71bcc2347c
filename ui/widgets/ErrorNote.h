// SPDX-License-Identifier: Apache-2.0
#pragma once
// ErrorNote: a problem said in plain words, with the technical text (Qt's error, a log line)
// behind a "Details" disclosure that opens below it; or a neutral line ("Checking…"). Hidden
// while there is nothing to say.

#include <QWidget>

class QLabel;
class QToolButton;

namespace tessera::ui {

class ErrorNote final : public QWidget {
    Q_OBJECT

public:
    explicit ErrorNote(QWidget* parent = nullptr);

    void showInfo(const QString& text);
    // details: shown only on request; no Details button when empty. An empty message shows the
    // Details button alone (the problem is told by a label beside it).
    void showError(const QString& message, const QString& details = QString());
    // A limitation rather than a failure (amber): what this computer cannot do, and why.
    void showWarning(const QString& message, const QString& details = QString());
    void clear();

    QString message() const; // "" while hidden
    QString details() const;
    bool isError() const { return m_error; }

private:
    void showProblem(const QString& colour, const QString& message, const QString& details);

    QLabel* m_message;
    QToolButton* m_toggle;
    QLabel* m_details;
    bool m_error = false;
};

} // namespace tessera::ui
