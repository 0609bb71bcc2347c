# core/node/ tests: units on real files and sockets; processes against the real coordinator.
