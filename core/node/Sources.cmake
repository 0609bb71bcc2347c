# core/node/: the volunteer's node (tessera-node's commands, coordinator client, shard store,
# engine, ledger, control socket). Add a file pair per line.
target_sources(tessera_core PRIVATE
    node/NodeCommandLine.cpp node/NodeCommandLine.h
    node/ShardInspect.cpp node/ShardInspect.h
)
