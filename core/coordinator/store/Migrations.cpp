// SPDX-License-Identifier: Apache-2.0
#include "coordinator/store/Migrations.h"

namespace tessera::coordinator {

const std::vector<Migration>& migrations() {
    static const std::vector<Migration> all{
        {1,
         "nodes, sessions, admission nonces, assignments, stage versions, credit receipts",
         {
             // state: "online" | "offline". stage: NULL until the node is assigned one.
             "CREATE TABLE nodes ("
             " node_id TEXT PRIMARY KEY,"
             " public_key TEXT NOT NULL,"
             " first_seen BIGINT NOT NULL,"
             " last_seen BIGINT NOT NULL,"
             " state TEXT NOT NULL,"
             " hardware_json TEXT NOT NULL,"
             " bench_json TEXT NOT NULL,"
             // bench.gflops again as a column: admission sums it per stage in one query.
             " bench_gflops DOUBLE PRECISION NOT NULL DEFAULT 0,"
             " client_version TEXT NOT NULL,"
             " stage INTEGER)",
             "CREATE INDEX nodes_state_stage ON nodes (state, stage)",
             // Only a hash of the bearer token is kept: a leaked database grants no sessions.
             "CREATE TABLE sessions ("
             " token_hash TEXT PRIMARY KEY,"
             " node_id TEXT NOT NULL REFERENCES nodes (node_id) ON DELETE CASCADE,"
             " created_at BIGINT NOT NULL,"
             " expires_at BIGINT NOT NULL,"
             " last_heartbeat BIGINT NOT NULL,"
             " revoked INTEGER NOT NULL DEFAULT 0)",
             "CREATE INDEX sessions_node ON sessions (node_id)",
             "CREATE INDEX sessions_expires ON sessions (expires_at)",
             "CREATE TABLE admission_nonces ("
             " nonce TEXT PRIMARY KEY,"
             " node_key TEXT NOT NULL,"
             " expires_at BIGINT NOT NULL,"
             " used INTEGER NOT NULL DEFAULT 0)",
             "CREATE INDEX admission_nonces_expires ON admission_nonces (expires_at)",
             // id: chosen by the coordinator (no AUTOINCREMENT/SERIAL, which differ by backend).
             "CREATE TABLE assignments ("
             " id BIGINT PRIMARY KEY,"
             " node_id TEXT NOT NULL REFERENCES nodes (node_id) ON DELETE CASCADE,"
             " stage INTEGER NOT NULL,"
             " assigned_at BIGINT NOT NULL,"
             " ended_at BIGINT)",
             "CREATE INDEX assignments_node ON assignments (node_id)",
             "CREATE TABLE stage_versions ("
             " stage INTEGER NOT NULL,"
             " version BIGINT NOT NULL,"
             " step BIGINT NOT NULL,"
             " file TEXT NOT NULL,"
             " file_size BIGINT NOT NULL,"
             " sha256 TEXT NOT NULL,"
             " manifest_json TEXT NOT NULL,"
             " created_at BIGINT NOT NULL,"
             " PRIMARY KEY (stage, version))",
             // micro_credits: integer millionths of a credit (1 credit = 10^15 FLOP), so sums
             // never drift the way floating point would. signature: base64.
             "CREATE TABLE credit_receipts ("
             " node_id TEXT NOT NULL REFERENCES nodes (node_id),"
             " seq BIGINT NOT NULL,"
             " issued_at BIGINT NOT NULL,"
             " flop BIGINT NOT NULL,"
             " micro_credits BIGINT NOT NULL,"
             " prev_hash TEXT NOT NULL,"
             " hash TEXT NOT NULL UNIQUE,"
             " signature TEXT NOT NULL,"
             " PRIMARY KEY (node_id, seq))",
         }},
        {2,
         "training: microbatches, accepted tasks, pending credit, the step and the loss history",
         {
             // state: "in_flight" | "completed" | "abandoned". Written in batches about once a
             // second; a restart turns what a dead process left in flight into "abandoned".
             "CREATE TABLE microbatches ("
             " id BIGINT PRIMARY KEY,"
             " step BIGINT NOT NULL,"
             " state TEXT NOT NULL,"
             " tokens BIGINT NOT NULL,"
             " issued_at BIGINT NOT NULL,"
             " finished_at BIGINT,"
             " loss DOUBLE PRECISION,"
             " reason TEXT)",
             "CREATE INDEX microbatches_state ON microbatches (state)",
             // The tasks of completed microbatches, each with the FLOPs it earns.
             "CREATE TABLE accepted_tasks ("
             " microbatch BIGINT NOT NULL,"
             " seq INTEGER NOT NULL,"
             " node_id TEXT NOT NULL,"
             " stage INTEGER NOT NULL,"
             " kind TEXT NOT NULL,"
             " tokens BIGINT NOT NULL,"
             " flop BIGINT NOT NULL,"
             " PRIMARY KEY (microbatch, seq))",
             "CREATE INDEX accepted_tasks_node ON accepted_tasks (node_id)",
             // FLOPs accepted but not yet in a receipt (receipts are batched).
             "CREATE TABLE credit_pending ("
             " node_id TEXT PRIMARY KEY REFERENCES nodes (node_id) ON DELETE CASCADE,"
             " flop BIGINT NOT NULL)",
             "CREATE TABLE training_state ("
             " id INTEGER PRIMARY KEY,"
             " step BIGINT NOT NULL,"
             " tokens BIGINT NOT NULL,"
             " joins BIGINT NOT NULL,"
             " leaves BIGINT NOT NULL,"
             " updated_at BIGINT NOT NULL)",
             "CREATE TABLE loss_history ("
             " step BIGINT PRIMARY KEY,"
             " loss DOUBLE PRECISION NOT NULL,"
             " tokens BIGINT NOT NULL,"
             " at BIGINT NOT NULL)",
         }},
        {3,
         "trust: reputation by node and by network, credit in escrow, forfeits",
         {
             // The network a node was admitted from (an IPv4 /24, an IPv6 /48).
             "ALTER TABLE nodes ADD COLUMN network TEXT NOT NULL DEFAULT ''",
             // subject: "node:<id>" or "net:<prefix>". audited_through: a node's work accepted up to
             // this time is covered by an audit it passed afterwards (its credit may be granted).
             "CREATE TABLE reputation ("
             " subject TEXT PRIMARY KEY,"
             " strikes INTEGER NOT NULL DEFAULT 0,"
             " audits_passed INTEGER NOT NULL DEFAULT 0,"
             " audits_failed INTEGER NOT NULL DEFAULT 0,"
             " banned_nodes INTEGER NOT NULL DEFAULT 0,"
             " banned_until BIGINT NOT NULL DEFAULT 0,"
             " ban_reason TEXT NOT NULL DEFAULT '',"
             " audited_through BIGINT NOT NULL DEFAULT 0,"
             " updated_at BIGINT NOT NULL)",
             // credit: "pending" (in escrow) | "granted" (in a receipt) | "forfeited". Rows from
             // before this migration were counted in credit_pending already: "settled".
             "ALTER TABLE accepted_tasks ADD COLUMN accepted_at BIGINT NOT NULL DEFAULT 0",
             "ALTER TABLE accepted_tasks ADD COLUMN credit TEXT NOT NULL DEFAULT 'settled'",
             "CREATE INDEX accepted_tasks_credit ON accepted_tasks (credit, node_id)",
             "CREATE TABLE credit_forfeits ("
             " node_id TEXT NOT NULL,"
             " at BIGINT NOT NULL,"
             " flop BIGINT NOT NULL,"
             " reason TEXT NOT NULL,"
             " PRIMARY KEY (node_id, at))",
         }},
        {4,
         "trust: an audit covers only the kinds of work it judged",
         {
             // audited_through now covers forward work; backward work (backward, forward_backward:
             // where a gradient can be a lie) only through this, set by an audit that judged one.
             "ALTER TABLE reputation ADD COLUMN backward_audited_through BIGINT NOT NULL DEFAULT 0",
         }},
        {5,
         "faults: a damaged checkpoint is refused, not served",
         {
             // Why the version's file was found damaged at a start ('' : usable). A refused version is
             // neither loaded nor offered to nodes; its number is not used again.
             "ALTER TABLE stage_versions ADD COLUMN refused TEXT NOT NULL DEFAULT ''",
         }},
        {6,
         "the leaderboard: a node's opt-in display name and team",
         {
             // Both as the node last sent them at admission (protocol/PublicProfile: checked, trimmed,
             // at most 32 characters); '' : not given — the node is shown as anonymous, in no team.
             "ALTER TABLE nodes ADD COLUMN display_name TEXT NOT NULL DEFAULT ''",
             "ALTER TABLE nodes ADD COLUMN team TEXT NOT NULL DEFAULT ''",
             "CREATE INDEX nodes_team ON nodes (team)",
             // The leaderboard's credits of the last 24 hours read only recent receipts.
             "CREATE INDEX credit_receipts_issued ON credit_receipts (issued_at)",
         }},
    };
    return all;
}

} // namespace tessera::coordinator
