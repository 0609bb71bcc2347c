// SPDX-License-Identifier: Apache-2.0
#pragma once
// RobustCombine: the average of the replicas' shares (SPARTA partitions today, gradients later)
// that no single replica can set. The plain mean follows one share sent as R·target − (R−1)·own
// anywhere; one NaN share poisons every replica that applies it.
//
//   1. a share with a value that is not finite is dropped, and so is one whose RMS is above
//      max(rmsRatio × the RMS of `reference` (the coordinator's checkpoint of the partition),
//      minRmsBound) — weights that large are no training's (AdamW with weight decay keeps them near
//      their scale; how far they move from the checkpoint is no guide: Adam moves each weight by
//      about the learning rate per step, many times the initial scale over a few hundred steps);
//      its sender is named (a strike)
//   2. the center is the shares' coordinate-wise median; each share's distance from it is clipped to
//      clipFactor × the lower median of those distances (CenteredClip, one pass)
//   3. with 3 or more shares the clipped shares are combined coordinate by coordinate by their
//      median, and a share further than outlierFactor × that lower median is named (outvoted, not
//      struck: a joiner that started from the lagging checkpoint is far too); with 1 or 2 by their mean:
//      there is no majority to tell who is right, only step 1 bounds what one of two replicas can do
//      (docs/ARCHITECTURE.md, "Trust")
//   3'. for gradients (meanOfClipped): the clipped shares' mean weighted by each share's weight (its
//      microbatches) — exactly the weighted mean while no share is clipped, so honest replicas
//      average as a single machine would; a share beyond the radius moves it by at most
//      radius × its weight's fraction

#include <QString>
#include <QStringList>

#include <span>
#include <utility>
#include <vector>

namespace tessera::coordinator {

struct RobustCombineSettings {
    double clipFactor = 2.0;
    double outlierFactor = 8.0;
    double rmsRatio = 4.0;
    double minRmsBound = 1.0;
    bool meanOfClipped = false;
};

struct Share {
    QString node;
    std::vector<float> values;
    double weight = 1.0; // meanOfClipped: its weight in the mean
};

struct Combined {
    std::vector<float> values;
    int used = 0;         // shares that took part
    QStringList dropped;  // not finite, or far larger than the reference
    QStringList outliers; // a change far beyond the others' (3 or more shares)
    QStringList clipped;  // shortened to the clip radius
};

Combined robustCombine(const std::vector<Share>& shares, std::span<const float> reference,
                       RobustCombineSettings settings = {});

} // namespace tessera::coordinator
