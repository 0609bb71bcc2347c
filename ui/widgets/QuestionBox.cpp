// SPDX-License-Identifier: Apache-2.0
#include "widgets/QuestionBox.h"

#include <QMessageBox>
#include <QPushButton>

#include <optional>

namespace tessera::ui {

namespace {
std::optional<QuestionBox::Answer> g_nextAnswer;
}

QuestionBox::Answer QuestionBox::ask(QWidget* parent, const QString& title, const QString& text,
                                     const QString& yes, const QString& no) {
    if (g_nextAnswer) {
        const Answer answer = *g_nextAnswer;
        g_nextAnswer.reset();
        return answer;
    }
    QMessageBox box(QMessageBox::Question, title, text, QMessageBox::Cancel, parent);
    QPushButton* yesButton = box.addButton(yes, QMessageBox::YesRole);
    QPushButton* noButton = box.addButton(no, QMessageBox::NoRole);
    box.setDefaultButton(noButton);
    box.exec();
    if (box.clickedButton() == yesButton)
        return Answer::Yes;
    if (box.clickedButton() == noButton)
        return Answer::No;
    return Answer::Cancel;
}

void QuestionBox::setNextAnswer(Answer answer) {
    g_nextAnswer = answer;
}

} // namespace tessera::ui
