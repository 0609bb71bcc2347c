# gpu/engine/ tests.
