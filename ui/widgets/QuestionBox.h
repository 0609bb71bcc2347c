// SPDX-License-Identifier: Apache-2.0
#pragma once
// QuestionBox: a yes-or-no question with the app's own button texts, and the seam its tests use
// instead of clicking a modal dialog (KeePassXC's MessageBox::setNextAnswer).

#include <QString>

class QWidget;

namespace tessera::ui {

class QuestionBox final {
public:
    enum class Answer { Yes, No, Cancel };

    // Asks `text`; yes and no are the buttons' words ("Quit Tessera", "Keep running"), and
    // closing the box answers Cancel.
    static Answer ask(QWidget* parent, const QString& title, const QString& text, const QString& yes,
                      const QString& no);
    // Tests: the next ask() returns this at once, without showing anything.
    static void setNextAnswer(Answer answer);
};

} // namespace tessera::ui
