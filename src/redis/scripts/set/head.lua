-- Head of the set script: several limits decided in one call, all or nothing (see src/redis/set.rs).
-- Each limit is decided by its algorithm's own body (build.rs joins them after the prelude, each as a
-- function named after its file), which sees the KEYS and ARGV of a script of its own: set/tail.lua
-- hands them to it, limit after limit, in the locals below.
-- KEYS: each limit's keys, limit after limit: its algorithm's, then its dynamic limit's when it has one.
-- ARGV: now (µs or ""), cost, how many limits; then 7 per limit: its algorithm (the body's name),
-- how many keys its algorithm has, its three parameters (ARGV[2..4] of its own script), '1' when its
-- dynamic limit's key follows, '1' when it runs dry.
local set_keys, set_argv = KEYS, ARGV
local KEYS, ARGV = {}, {}
