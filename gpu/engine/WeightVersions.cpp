// SPDX-License-Identifier: Apache-2.0
#include "engine/WeightVersions.h"

#include "model/StageModel.h"

#include <torch/torch.h>

#include <algorithm>
#include <string>

namespace tessera::gpu {

void WeightVersions::admit(std::int64_t step) {
    // A step at or before the last one shared: the coordinator started its count over (it restarted
    // from its last saved step). What is held belongs to the old count: it goes.
    if (step <= m_lastShared)
        reset();
    // At most kMaxSteps steps' gradients: the oldest goes (its step ended elsewhere or never will).
    while (!m_steps.contains(step) && std::int64_t(m_steps.size()) >= kMaxSteps) {
        const std::int64_t oldest = m_steps.begin()->first;
        m_steps.erase(m_steps.begin());
        std::erase_if(m_records, [&](const auto& r) { return r.second.step == oldest; });
        prune();
    }
}

void WeightVersions::recordForward(std::int64_t id, std::int64_t step) {
    if (m_records.size() >= kMaxRecords && !m_records.contains(id)) {
        const auto oldest = std::min_element(m_records.begin(), m_records.end(),
                                             [](const auto& a, const auto& b) { return a.first < b.first; });
        m_records.erase(oldest);
    }
    m_records[id] = Record{m_version, step};
    m_steps.try_emplace(step);
}

Status WeightVersions::backward(std::int64_t id, const std::function<void()>& body) {
    const auto it = m_records.find(id);
    if (it == m_records.end())
        return makeError("microbatch " + std::to_string(id) + " has no recorded forward",
                         ErrorKind::InvalidInput);
    const Record record = it->second;
    if (record.version == m_version) {
        body();
    } else {
        const auto stash = m_stashes.find(record.version);
        if (stash == m_stashes.end()) {
            m_records.erase(it);
            return makeError("the weights microbatch " + std::to_string(id) + " ran forward on (version " +
                                 std::to_string(record.version) + ") are no longer held",
                             ErrorKind::InvalidInput);
        }
        m_model.withWeights(stash->second, body);
    }
    m_records.erase(id);
    // Its gradients go to its step's share, out of the parameters' .grad.
    torch::NoGradGuard noGrad;
    StepGradients& held = m_steps[record.step];
    const auto parameters = m_model.namedParameters();
    held.grads.resize(parameters.size());
    for (std::size_t i = 0; i < parameters.size(); ++i) {
        torch::Tensor grad = parameters[i].second.grad();
        if (!grad.defined())
            continue;
        if (held.grads[i].defined())
            held.grads[i].add_(grad);
        else
            held.grads[i] = grad.clone();
        parameters[i].second.mutable_grad() = torch::Tensor();
    }
    ++held.microbatches;
    prune();
    return {};
}

void WeightVersions::forget(std::int64_t id) {
    if (m_records.erase(id) > 0)
        prune();
}

std::int64_t WeightVersions::takeStep(std::int64_t step) {
    std::int64_t microbatches = 0;
    const auto parameters = m_model.namedParameters();
    if (const auto it = m_steps.find(step); it != m_steps.end()) {
        microbatches = it->second.microbatches;
        for (std::size_t i = 0; i < it->second.grads.size(); ++i)
            if (torch::Tensor& held = it->second.grads[i]; held.defined()) {
                torch::Tensor& grad = parameters[i].second.mutable_grad();
                if (grad.defined())
                    grad.add_(held);
                else
                    grad = std::move(held);
            }
    }
    m_steps.erase(m_steps.begin(), m_steps.upper_bound(step));
    std::erase_if(m_records, [&](const auto& r) { return r.second.step <= step; });
    m_lastShared = std::max(m_lastShared, step);
    prune();
    return microbatches;
}

void WeightVersions::beforeUpdate() {
    const bool needed = std::any_of(m_records.begin(), m_records.end(),
                                    [&](const auto& r) { return r.second.version == m_version; });
    if (!needed)
        return;
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> copy;
    for (const auto& [name, tensor] : m_model.namedParameters())
        copy.push_back(tensor.detach().clone());
    m_stashes[m_version] = std::move(copy);
    // Bounded: the oldest stash goes, and with it the microbatches that needed it.
    while (m_stashes.size() > kMaxStashes) {
        const std::int64_t oldest = m_stashes.begin()->first;
        m_stashes.erase(m_stashes.begin());
        std::erase_if(m_records, [&](const auto& r) { return r.second.version == oldest; });
    }
}

void WeightVersions::afterUpdate() {
    ++m_version;
    prune();
}

void WeightVersions::reset() {
    m_lastShared = -1;
    m_records.clear();
    m_stashes.clear();
    m_steps.clear();
}

std::int64_t WeightVersions::microbatchesHeld() const {
    std::int64_t n = 0;
    for (const auto& [step, held] : m_steps)
        n += held.microbatches;
    return n;
}

void WeightVersions::prune() {
    for (auto it = m_stashes.begin(); it != m_stashes.end();) {
        const std::int64_t v = it->first;
        const bool needed = std::any_of(m_records.begin(), m_records.end(),
                                        [&](const auto& r) { return r.second.version == v; });
        it = needed ? std::next(it) : m_stashes.erase(it);
    }
}

} // namespace tessera::gpu
