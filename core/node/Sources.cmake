# core/node/: the volunteer's node (tessera-node's commands, coordinator client, shard store,
# engine, ledger, control socket). Add a file pair per line.
target_sources(tessera_core PRIVATE
    node/CreditsPage.cpp node/CreditsPage.h
    node/LedgerCommand.cpp node/LedgerCommand.h
    node/LocalLedger.cpp node/LocalLedger.h
    node/Backoff.h
    node/BenchmarkCache.cpp node/BenchmarkCache.h
    node/CoordinatorClient.cpp node/CoordinatorClient.h
    node/Node.cpp node/Node.h
    node/ControlClient.cpp node/ControlClient.h
    node/ControlConnection.cpp node/ControlConnection.h
    node/ControlEndpoint.cpp node/ControlEndpoint.h
    node/ControlServer.cpp node/ControlServer.h
    node/ComputeThrottle.cpp node/ComputeThrottle.h
    node/EngineTask.h
    node/EngineThread.cpp node/EngineThread.h
    node/EngineWorker.cpp node/EngineWorker.h
    node/NodeCommandLine.cpp node/NodeCommandLine.h
    node/NodeFiles.cpp node/NodeFiles.h
    node/NodeLog.cpp node/NodeLog.h
    node/NodeOptions.h
    node/NodeRunCommands.cpp node/NodeRunCommands.h
    node/NodeSession.cpp node/NodeSession.h
    node/NodeState.cpp node/NodeState.h
    node/ShardInspect.cpp node/ShardInspect.h
    node/Sha256Digest.cpp node/Sha256Digest.h
    node/ShardDownload.cpp node/ShardDownload.h
    node/ShardProgress.cpp node/ShardProgress.h
    node/ShardStore.cpp node/ShardStore.h
    node/TaskRunner.cpp node/TaskRunner.h
    node/TransferRate.cpp node/TransferRate.h
)
