// SPDX-License-Identifier: Apache-2.0
#include "coordinator/training/StepWindow.h"

#include <algorithm>

namespace tessera::coordinator {

StepWindow::StepWindow(int microbatchesPerStep, int depth, qint64 ended, qint64 maxSteps)
    : m_perStep(std::max(1, microbatchesPerStep))
    , m_depth(std::max(1, depth))
    , m_ended(ended)
    , m_updated(ended)
    , m_maxSteps(maxSteps) {}

std::optional<qint64> StepWindow::next() const {
    for (qint64 step = m_ended + 1; step <= m_ended + m_depth; ++step) {
        if (m_maxSteps > 0 && step > m_maxSteps)
            return std::nullopt;
        if (alive(step) >= m_perStep)
            continue; // fully issued: the next one
        // Its microbatches run on the weights of step − depth's update: sent to every node yet?
        if (step - m_depth > m_updated)
            return std::nullopt;
        return step;
    }
    return std::nullopt;
}

void StepWindow::issued(qint64 step) {
    ++m_steps[step].alive;
}

void StepWindow::abandoned(qint64 step) {
    if (const auto it = m_steps.find(step); it != m_steps.end() && it->second.alive > 0)
        --it->second.alive;
}

qint64 StepWindow::completed(qint64 step) {
    const qint64 owner = std::max(step, m_ended + 1);
    ++m_steps[owner].completed;
    return owner;
}

bool StepWindow::complete() const {
    return completedOf(m_ended + 1) >= m_perStep;
}

qint64 StepWindow::end() {
    const qint64 step = ++m_ended;
    m_steps.erase(m_steps.begin(), m_steps.upper_bound(step));
    return step;
}

void StepWindow::updated(qint64 step) {
    m_updated = std::max(m_updated, step);
}

int StepWindow::alive(qint64 step) const {
    const auto it = m_steps.find(step);
    return it == m_steps.end() ? 0 : it->second.alive;
}

int StepWindow::completedOf(qint64 step) const {
    const auto it = m_steps.find(step);
    return it == m_steps.end() ? 0 : it->second.completed;
}

} // namespace tessera::coordinator
