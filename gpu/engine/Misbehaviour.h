// SPDX-License-Identifier: Apache-2.0
#pragma once
// Misbehaviour: a node that lies, for the tests and benchmarks of the coordinator's checks — never
// for real use. The node's engine applies it to what it returns when TESSERA_TEST_MISBEHAVE names a
// mode (a real node process, real computation, then the lie: exactly what a modified client does).
//
//   echo    a forward returns its input frame, a backward the gradient it was given
//   zeros   every returned tensor is zeros        noise  Gaussian noise of the honest RMS
//   scale   every returned tensor times 3          flip   every returned gradient negated
//   nan     one value of every returned tensor NaN
//   loss    the last stage reports loss 2.0 and returns a zero gradient
//   poison  averaging and gradient shares pushed far from its weights (10 − v: of two replicas the plain
//           mean would be 5); its own weights stay whole (the node keeps the true snapshot)
//   fast    reports 1e-9 compute seconds for every task (and computes honestly)
//   identity  its weights reported as zeros (pre-norm blocks are then the identity) and every result its
//           input with its largest value 1% larger (no longer the input byte for byte): what such weights
//           give
//   frame   every tensor it returns scaled to a token RMS of 9,999.9, just under the result checks'
//           bound (10⁴): what makes an honest neighbour's answer cross it (a frame-up)
//   mute    computes honestly and never sends the weights an audit asks for (a whole-stage snapshot)
//   tokens  two tokens' rows of every returned tensor times 1.2 (the frame as a whole moves by under
//           5%: what one relative error over the frame lets through)
//   stale   never applies the averaged updates (answers every step as applied) and computes honestly
//           with the weights it keeps: a node that saves the work of stepping, or one that keeps
//           weights of its own
//   unsynced like stale, and fails every sync it is sent (the weights it is given never taken): a node that
//           wants to be routed with weights of its own, past the sync that would replace them
//   reverse computes honestly and sends −9 × its honest gradient share (an 8- or 32-bit dense one; its
//           RMS stays within every bound on a share's size): with two replicas it sets the mean
//   lazy    answers a stage 0 backward (which returns no tensor) without computing it and says its
//           share holds those microbatches (zeros where their gradients would be): paid for, and fastest
//   inflate answers `missing_graph` to the first send of every backward without its input, then runs
//           it with its input (and the graph it kept): what would be paid as a recompute (6NT, not 4NT)
// A lie that needs a shape the task lacks (echo on stage 0's forward) leaves the result honest.
// Torch-free header: the node's engine (core/) drives it.

#include "base/ModelConfig.h"
#include "base/Result.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace tessera::gpu {

class Codec;

class Misbehaviour {
public:
    enum class Mode {
        Echo,
        Zeros,
        Noise,
        Scale,
        Flip,
        Nan,
        Loss,
        Poison,
        Fast,
        Tokens,
        Identity,
        Mute,
        Frame,
        Stale,
        Unsynced,
        Reverse,
        Lazy,
        Inflate
    };

    // None when `mode` is empty; an error names the modes when it is unknown.
    static Result<std::unique_ptr<Misbehaviour>> create(const ModelConfig& config, std::string_view mode);
    ~Misbehaviour();

    Mode mode() const { return m_mode; }
    // Rewrites a returned frame in place (the same length). `given`: the task's own input of the
    // same kind (a middle stage's input activation, a backward's incoming gradient), may be empty.
    void activation(std::span<std::uint8_t> frame, std::span<const std::uint8_t> given) const;
    void gradient(std::span<std::uint8_t> frame, std::span<const std::uint8_t> given) const;
    void loss(double& value) const;
    void share(std::vector<float>& values) const; // an averaging share or snapshot
    void gradientShare(std::vector<float>& values) const;
    // The weights it reports when asked for them (an audit's snapshot, an averaging share).
    void weights(std::vector<float>& values) const;
    bool fastTiming() const { return m_mode == Mode::Fast; }
    // Whether it keeps silent when asked for all its weights (an audit's snapshot).
    bool withholdsSnapshots() const { return m_mode == Mode::Mute; }
    // Whether it leaves its weights as they are when told to apply a step's update (and says it did).
    bool skipsUpdates() const { return m_mode == Mode::Stale || m_mode == Mode::Unsynced; }
    // Whether it fails every chunk of a sync (says it could not set those weights).
    bool refusesSyncs() const { return m_mode == Mode::Unsynced; }
    // Whether it answers a stage 0 backward without computing it (and counts it in its share).
    bool skipsFirstStageBackwards() const { return m_mode == Mode::Lazy; }
    // Whether it says it lost the graph of a backward sent without its input (the first time).
    bool claimsMissingGraphs() const { return m_mode == Mode::Inflate; }

private:
    Misbehaviour(Mode mode, std::unique_ptr<Codec> codec);
    void rewrite(std::span<std::uint8_t> frame, bool activation) const;

    Mode m_mode;
    std::unique_ptr<Codec> m_codec;
};

} // namespace tessera::gpu
