# gpu/shard
